//! `ssdlab.swap`: the paging model (the crate's `paging` module), conversions only.

use crate::errors::{no_signal, to_py, to_py_signalled};
use pyo3::prelude::*;

/// The per-request rows of the swap trace: (op, offset, len, submit_ps, done_ps); op 0 read,
/// 1 write, 2 trim.
type TraceRows = Vec<(u8, u64, u64, u64, u64)>;

/// Run the paging model: (result JSON, per-swap-in latencies in ps, the swap trace rows).
/// With `trace_out`, the swap trace is also written there in `trace_format` (default fio).
/// The arguments mirror the Python keywords one to one (as `trace_stats` does).
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (spec, memory, swap_size, workload, overrides = Vec::new(), seed = 1, trace_out = None, trace_format = None))]
fn swap(
    py: Python<'_>,
    spec: String,
    memory: String,
    swap_size: String,
    workload: String,
    overrides: Vec<String>,
    seed: u64,
    trace_out: Option<String>,
    trace_format: Option<String>,
) -> PyResult<(String, Vec<u64>, TraceRows)> {
    use ssdlab::paging::trace_out;
    // Ctrl-C is seen while the model runs (a KeyboardInterrupt becomes `Interrupted`), not
    // only when it ends.
    let mut raised = None;
    let out = py
        .allow_threads(|| {
            // A bad format name fails before the run, not after it.
            let format = trace_out::format_named(trace_format.as_deref().unwrap_or("fio"))?;
            let spec = ssdlab::paging::SwapSpec::resolve(
                &spec, &memory, &swap_size, &workload, &overrides,
            )?;
            let out = spec.run_with(seed, &mut |_, _| no_signal(&mut raised))?;
            if let Some(path) = &trace_out {
                trace_out::write(&out.trace, path, format)?;
            }
            Ok::<_, ssdlab::Error>(out)
        })
        .map_err(|e| to_py_signalled(py, e, raised))?;
    let json = serde_json::to_string_pretty(&out.result).expect("swap result serialises");
    let rows = out
        .trace
        .iter()
        .map(|r| (r.op, r.offset, r.len, r.submit_ps, r.done_ps))
        .collect();
    Ok((json, out.swap_in_ps, rows))
}

/// Check a paging run without running it (what `swap` would refuse, refused now) and return
/// its canonical JSON: the device (an analytic part's name or the resolved config), the
/// paging config with its defaults, the workload. Sweeps check their points with it and hash
/// it for the point's identity.
#[pyfunction]
#[pyo3(signature = (spec, memory, swap_size, workload, overrides = Vec::new()))]
fn check_swap(
    spec: String,
    memory: String,
    swap_size: String,
    workload: String,
    overrides: Vec<String>,
) -> PyResult<String> {
    ssdlab::paging::SwapSpec::resolve(&spec, &memory, &swap_size, &workload, &overrides)
        .map(|s| s.to_json())
        .map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(swap, m)?)?;
    m.add_function(wrap_pyfunction!(check_swap, m)?)
}
