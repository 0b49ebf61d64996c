//! `ssdlab.swap`: the paging model (the crate's `paging` module), conversions only.

use crate::errors::to_py;
use pyo3::prelude::*;

/// The per-request rows of the swap trace: (op, offset, len, submit_ps, done_ps); op 0 read,
/// 1 write, 2 trim.
type TraceRows = Vec<(u8, u64, u64, u64, u64)>;

/// Run the paging model: (result JSON, per-swap-in latencies in ps, the swap trace rows).
#[pyfunction]
#[pyo3(signature = (spec, memory, swap_size, workload, overrides = Vec::new(), seed = 1))]
fn swap(
    py: Python<'_>,
    spec: String,
    memory: String,
    swap_size: String,
    workload: String,
    overrides: Vec<String>,
    seed: u64,
) -> PyResult<(String, Vec<u64>, TraceRows)> {
    let out = py
        .allow_threads(|| {
            ssdlab::paging::run_spec(&spec, &memory, &swap_size, &workload, &overrides, seed)
        })
        .map_err(to_py)?;
    let json = serde_json::to_string_pretty(&out.result).expect("swap result serialises");
    let rows = out
        .trace
        .iter()
        .map(|r| (r.op, r.offset, r.len, r.submit_ps, r.done_ps))
        .collect();
    Ok((json, out.swap_in_ps, rows))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(swap, m)?)
}
