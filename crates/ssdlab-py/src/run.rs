//! Runs for `ssdlab.api.run` and `ssdlab.results`: a job or a trace replay on a config, the
//! benchmark, and the result's columns.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use ssdlab::driver::requests::{ListedRequest, RequestList};
use ssdlab::error::Invalid;
use ssdlab::workload::trace::replay::TraceJob;
use ssdlab::{Error, JobSpec, RunOptions, SsdConfig};

use crate::errors::{no_signal, to_py, to_py_signalled, Interrupted};

/// The scalar figures every result has, as dotted paths in the result's order: a results table's
/// columns.
#[pyfunction]
fn result_columns() -> Vec<String> {
    ssdlab::stats::result::RunResult::figure_columns()
}

/// Run a job. Releases the GIL while the core runs; `progress(done, total)` is called with the
/// GIL about ten times a second, and a KeyboardInterrupt there stops the run.
#[pyfunction]
#[pyo3(signature = (config_json, job_json, seed, record_requests=false, progress=None, stats_interval=None, power_cut_event=None, power_cut_at=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    config_json: &str,
    job_json: &str,
    seed: u64,
    record_requests: bool,
    progress: Option<PyObject>,
    stats_interval: Option<&str>,
    power_cut_event: Option<u64>,
    power_cut_at: Option<&str>,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let job = JobSpec::from_json(job_json).map_err(to_py)?;
    let opts = RunOptions {
        seed,
        record_requests,
        stats_interval: interval(stats_interval)?,
        power_cut_event,
        power_cut_at: cut_time(power_cut_at)?,
    };
    run_with(py, progress, |cb| ssdlab::run(&cfg, &job, &opts, cb))
}

/// Replay a trace (or a workload model) described by a trace job; the same contract as `run`.
#[pyfunction]
#[pyo3(signature = (config_json, trace_json, seed, record_requests=false, progress=None, stats_interval=None, power_cut_event=None, power_cut_at=None))]
#[allow(clippy::too_many_arguments)]
fn run_trace(
    py: Python<'_>,
    config_json: &str,
    trace_json: &str,
    seed: u64,
    record_requests: bool,
    progress: Option<PyObject>,
    stats_interval: Option<&str>,
    power_cut_event: Option<u64>,
    power_cut_at: Option<&str>,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let job = TraceJob::from_json(trace_json).map_err(to_py)?;
    let opts = RunOptions {
        seed,
        record_requests,
        stats_interval: interval(stats_interval)?,
        power_cut_event,
        power_cut_at: cut_time(power_cut_at)?,
    };
    run_with(py, progress, |cb| {
        if ssdlab::serve::session::is_session_log(&job.trace) {
            ssdlab::serve::session::run_trace_job(&cfg, &job, &opts, cb)
        } else {
            ssdlab::run_replay(&cfg, &job, &opts, cb)
        }
    })
}

/// Run a host program's request list (`ssdlab::run_requests`): request k is `Op::ALL[ops[k]]`
/// at byte `offsets[k]`, `lens[k]` bytes long, in write stream `streams[k]`; the offsets and
/// lengths are little-endian u64s. The same contract as `run`.
#[pyfunction]
#[pyo3(signature = (config_json, ops, offsets, lens, streams, seed, iodepth=32, warmup=0, progress=None, stats_interval=None))]
#[allow(clippy::too_many_arguments)]
fn run_requests(
    py: Python<'_>,
    config_json: &str,
    ops: &[u8],
    offsets: &[u8],
    lens: &[u8],
    streams: &[u8],
    seed: u64,
    iodepth: u32,
    warmup: u64,
    progress: Option<PyObject>,
    stats_interval: Option<&str>,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let list = request_list(ops, offsets, lens, streams, iodepth, warmup).map_err(to_py)?;
    let opts = RunOptions {
        seed,
        record_requests: false,
        stats_interval: interval(stats_interval)?,
        power_cut_event: None,
        power_cut_at: None,
    };
    run_with(py, progress, |cb| {
        ssdlab::run_requests(&cfg, list, &opts, cb)
    })
}

/// The request list of `run_requests`' arrays, or an error naming the array that is wrong.
fn request_list(
    ops: &[u8],
    offsets: &[u8],
    lens: &[u8],
    streams: &[u8],
    iodepth: u32,
    warmup: u64,
) -> ssdlab::Result<RequestList> {
    let n = ops.len();
    for (name, bytes, want) in [
        ("offsets", offsets.len(), n.checked_mul(8)),
        ("lens", lens.len(), n.checked_mul(8)),
        ("streams", streams.len(), Some(n)),
    ] {
        if Some(bytes) != want {
            return Err(Error::bad_job(Invalid::got(
                "request list",
                name,
                format!("{bytes} bytes"),
                format!("one entry per op ({n} ops)"),
            )));
        }
    }
    let word =
        |b: &[u8], k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().expect("8 bytes"));
    let mut requests = Vec::with_capacity(n);
    for k in 0..n {
        let Some(&op) = ssdlab::request::Op::ALL.get(ops[k] as usize) else {
            return Err(Error::bad_job(Invalid::got(
                format!("request list, request {k}"),
                "op",
                format!("code {}", ops[k]),
                format!("0 up to {}", ssdlab::request::Op::ALL.len() - 1),
            )));
        };
        requests.push(ListedRequest {
            op,
            offset: word(offsets, k),
            len: word(lens, k),
            stream: streams[k],
        });
    }
    Ok(RequestList {
        requests,
        iodepth,
        warmup,
    })
}

/// Run jobs as flows (a JSON list of jobs; `ssdlab::run_flows`): the result, all the records,
/// and each flow's measured records, all as `run` gives them.
#[pyfunction]
#[pyo3(signature = (config_json, jobs_json, seed, record_requests=false, progress=None, stats_interval=None, power_cut_event=None, power_cut_at=None))]
#[allow(clippy::too_many_arguments)]
fn run_flows(
    py: Python<'_>,
    config_json: &str,
    jobs_json: &str,
    seed: u64,
    record_requests: bool,
    progress: Option<PyObject>,
    stats_interval: Option<&str>,
    power_cut_event: Option<u64>,
    power_cut_at: Option<&str>,
) -> PyResult<FlowsOutput> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let values: Vec<serde_json::Value> = serde_json::from_str(jobs_json).map_err(|e| {
        let problem = ssdlab::error::json_message(&e);
        let words = ssdlab::error::says(format!("{problem}; expected a list of jobs"));
        to_py(Error::bad_job(Invalid::unnamed("flows", words)))
    })?;
    let jobs = values
        .iter()
        .map(|v| JobSpec::from_json(&v.to_string()))
        .collect::<ssdlab::Result<Vec<_>>>()
        .map_err(to_py)?;
    let opts = RunOptions {
        seed,
        record_requests,
        stats_interval: interval(stats_interval)?,
        power_cut_event,
        power_cut_at: cut_time(power_cut_at)?,
    };
    let out = run_out(py, progress, |cb| ssdlab::run_flows(&cfg, &jobs, &opts, cb))?;
    let per_flow = out
        .flow_records
        .map(|all| all.into_iter().map(|r| records_bytes(py, r)).collect());
    Ok((
        out.result.to_json(),
        out.records.map(|r| records_bytes(py, r)),
        per_flow,
    ))
}

/// A power cut's time as written (`"2ms"`), or none.
fn cut_time(text: Option<&str>) -> PyResult<Option<ssdlab::sim::SimTime>> {
    text.map(|t| {
        ssdlab::config::units::parse_duration(t)
            .map_err(|p| to_py(Error::bad_job(Invalid::new("run", "power_cut_at", p))))
    })
    .transpose()
}

/// A statistics interval as written (`"1ms"`), or none.
fn interval(text: Option<&str>) -> PyResult<Option<ssdlab::sim::SimTime>> {
    text.map(|t| {
        ssdlab::config::units::parse_duration(t)
            .map_err(|p| to_py(Error::bad_job(Invalid::new("run", "stats_interval", p))))
    })
    .transpose()
}

/// What `run_flows` returns: the result's JSON, every record, each flow's records.
type FlowsOutput = (String, Option<Py<PyBytes>>, Option<Vec<Py<PyBytes>>>);

/// Records as the Python side reads them: six little-endian u64 a request (op, offset,
/// issue_ps, latency_ps, len, queue: the host queue, a job's instance, so that fio's per-clone
/// logs can be split).
fn records_bytes(py: Python<'_>, recs: Vec<ssdlab::device::RequestRecord>) -> Py<PyBytes> {
    let mut buf = Vec::with_capacity(recs.len() * 48);
    for r in recs {
        for v in [
            r.op as u64,
            r.offset,
            r.issue_ps,
            r.latency_ps,
            r.len,
            r.queue as u64,
        ] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
    }
    PyBytes::new(py, &buf).unbind()
}

/// Run `f` without the GIL, calling `progress` (with the GIL) when the core reports.
fn run_with(
    py: Python<'_>,
    progress: Option<PyObject>,
    f: impl FnOnce(&mut dyn FnMut(u64, u64) -> bool) -> ssdlab::Result<ssdlab::RunOutput> + Send,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
    let out = run_out(py, progress, f)?;
    let records = out.records.map(|recs| records_bytes(py, recs));
    Ok((out.result.to_json(), records))
}

/// [`run_with`]'s run: its output, or the error (a KeyboardInterrupt after preconditioning
/// raises `Interrupted` with the result so far).
fn run_out(
    py: Python<'_>,
    progress: Option<PyObject>,
    f: impl FnOnce(&mut dyn FnMut(u64, u64) -> bool) -> ssdlab::Result<ssdlab::RunOutput> + Send,
) -> PyResult<ssdlab::RunOutput> {
    let mut callback_error: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        f(&mut |done, total| {
            Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    callback_error = Some(e);
                    return false;
                }
                if let Some(cb) = &progress {
                    if let Err(e) = cb.call1(py, (done, total)) {
                        callback_error = Some(e);
                        return false;
                    }
                }
                true
            })
        })
    });
    let out = match out {
        // Stopped by Ctrl-C after preconditioning: `Interrupted("interrupted", result JSON)`,
        // the result of the requests completed so far for the caller to keep (`ssdlab run`
        // prints and writes it, marked partial). A callback that raised anything else raises it.
        Ok(o) if o.interrupted => {
            return Err(match callback_error {
                Some(e) if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => e,
                _ => Interrupted::new_err(("interrupted", o.result.to_json())),
            })
        }
        Ok(o) => o,
        Err(Error::Interrupted) => {
            return Err(match callback_error {
                Some(e) if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => e,
                _ => Interrupted::new_err("interrupted"),
            })
        }
        Err(e) => return Err(to_py(e)),
    };
    Ok(out)
}

#[pyfunction]
#[pyo3(name = "bench", signature = (io_count, seed=1, overwrite=0.0, progress=None))]
fn run_bench(
    py: Python<'_>,
    io_count: u64,
    seed: u64,
    overwrite: f64,
    progress: Option<PyObject>,
) -> PyResult<String> {
    // The benchmark runs for tens of seconds (its preconditioning most of them): it looks for
    // Ctrl-C as a run does, and reports each of its runs' progress, `(0, 0)` while it
    // preconditions.
    let v = with_progress(py, progress, |cb| {
        ssdlab::bench_with(io_count, seed, overwrite, cb)
    })?;
    Ok(serde_json::to_string_pretty(&v).expect("json"))
}

/// `progress` as the core's callback: false (stop) on a signal or when the callback raised.
fn with_progress<T>(
    py: Python<'_>,
    progress: Option<PyObject>,
    work: impl FnOnce(&mut dyn FnMut(u64, u64) -> bool) -> ssdlab::Result<T> + Send,
) -> PyResult<T>
where
    T: Send,
{
    let mut raised = None;
    py.allow_threads(|| {
        work(&mut |done, total| {
            if !no_signal(&mut raised) {
                return false;
            }
            let Some(cb) = &progress else {
                return true;
            };
            Python::with_gil(|py| match cb.call1(py, (done, total)) {
                Ok(_) => true,
                Err(e) => {
                    raised = Some(e);
                    false
                }
            })
        })
    })
    .map_err(|e| to_py_signalled(py, e, raised.take()))
}

/// Precondition the config's drive and save its state to `path` (docs/state.md); what it
/// took, as JSON.
#[pyfunction]
#[pyo3(signature = (config_json, seed, path, progress=None))]
fn precondition_to_state(
    py: Python<'_>,
    config_json: &str,
    seed: u64,
    path: &str,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let path = std::path::PathBuf::from(path);
    let v = with_progress(py, progress, |p| {
        ssdlab::run::precondition_to_state(&cfg, seed, &path, p)
    })?;
    Ok(serde_json::to_string_pretty(&v).expect("json"))
}

/// The saved state's benchmark figure (`ssdlab bench --state-file`), as JSON.
#[pyfunction]
#[pyo3(signature = (io_count, seed, path, progress=None))]
fn bench_state(
    py: Python<'_>,
    io_count: u64,
    seed: u64,
    path: &str,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let path = std::path::PathBuf::from(path);
    let v = with_progress(py, progress, |p| {
        ssdlab::run::bench_state(io_count, seed, &path, p)
    })?;
    Ok(serde_json::to_string_pretty(&v).expect("json"))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(result_columns, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_trace, m)?)?;
    m.add_function(wrap_pyfunction!(run_flows, m)?)?;
    m.add_function(wrap_pyfunction!(run_requests, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(precondition_to_state, m)?)?;
    m.add_function(wrap_pyfunction!(bench_state, m)?)?;
    Ok(())
}
