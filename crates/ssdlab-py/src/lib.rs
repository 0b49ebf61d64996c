//! Python bindings: conversions only. Every decision lives in the `ssdlab` crate.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ssdlab::workload::trace::{self, replay::TraceJob, stats::StatsOptions, Format, ReadOptions};
use ssdlab::{Error, JobSpec, RunOptions, SsdConfig};

create_exception!(
    _core,
    SsdlabError,
    PyException,
    "Base of every ssdlab user error."
);
create_exception!(
    _core,
    ConfigError,
    SsdlabError,
    "A bad configuration, preset, override or config file."
);
create_exception!(
    _core,
    JobError,
    SsdlabError,
    "A bad job description, or one that does not fit the device."
);
create_exception!(
    _core,
    TraceError,
    SsdlabError,
    "A trace file that cannot be read: a malformed line, an unknown format, an unreadable file."
);
create_exception!(
    _core,
    Interrupted,
    SsdlabError,
    "A run stopped by the user."
);
create_exception!(
    _core,
    SimulationError,
    SsdlabError,
    "The simulation reached a state it cannot continue from."
);

fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Config(_) => ConfigError::new_err(msg),
        Error::Job(_) => JobError::new_err(msg),
        Error::Trace(_) => TraceError::new_err(msg),
        Error::Interrupted => Interrupted::new_err(msg),
        Error::Sim(_) => SimulationError::new_err(msg),
    }
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for name in ssdlab::config::presets::preset_names() {
        let cfg = SsdConfig::resolve(name, &[]).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("description", &cfg.meta.description)?;
        d.set_item("source", &cfg.meta.source)?;
        out.push(d);
    }
    Ok(out)
}

#[pyfunction]
fn preset_toml(name: &str) -> PyResult<&'static str> {
    ssdlab::config::presets::preset_toml(name).ok_or_else(|| {
        ConfigError::new_err(format!(
            "no preset named {name:?}; presets: {}",
            ssdlab::config::presets::preset_names().join(", ")
        ))
    })
}

#[pyfunction]
fn resolve_config(spec: &str, overrides: Vec<String>) -> PyResult<String> {
    SsdConfig::resolve(spec, &overrides)
        .map(|c| c.to_json())
        .map_err(to_py)
}

#[pyfunction]
fn config_toml(config_json: &str) -> PyResult<String> {
    SsdConfig::from_json(config_json)
        .map(|c| c.to_toml())
        .map_err(to_py)
}

#[pyfunction]
fn load_job(path: &str) -> PyResult<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| JobError::new_err(format!("{path}: cannot read: {e}")))?;
    JobSpec::from_toml_str(&text, path)
        .map(|j| j.to_json())
        .map_err(to_py)
}

#[pyfunction]
fn check_job(job_json: &str) -> PyResult<String> {
    JobSpec::from_json(job_json)
        .map(|j| j.to_json())
        .map_err(to_py)
}

/// Run a job. Releases the GIL while the core runs; `progress(done, total)` is called with the
/// GIL about ten times a second, and a KeyboardInterrupt there stops the run.
#[pyfunction]
#[pyo3(signature = (config_json, job_json, seed, record_requests=false, progress=None))]
fn run(
    py: Python<'_>,
    config_json: &str,
    job_json: &str,
    seed: u64,
    record_requests: bool,
    progress: Option<PyObject>,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let job = JobSpec::from_json(job_json).map_err(to_py)?;
    let opts = RunOptions {
        seed,
        record_requests,
    };
    run_with(py, progress, |cb| ssdlab::run(&cfg, &job, &opts, cb))
}

/// Replay a trace (or a workload model) described by a trace job; the same contract as `run`.
#[pyfunction]
#[pyo3(signature = (config_json, trace_json, seed, record_requests=false, progress=None))]
fn run_trace(
    py: Python<'_>,
    config_json: &str,
    trace_json: &str,
    seed: u64,
    record_requests: bool,
    progress: Option<PyObject>,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let job = TraceJob::from_json(trace_json).map_err(to_py)?;
    let opts = RunOptions {
        seed,
        record_requests,
    };
    run_with(py, progress, |cb| ssdlab::run_replay(&cfg, &job, &opts, cb))
}

/// Run `f` without the GIL, calling `progress` (with the GIL) when the core reports.
fn run_with(
    py: Python<'_>,
    progress: Option<PyObject>,
    f: impl FnOnce(&mut dyn FnMut(u64, u64) -> bool) -> ssdlab::Result<ssdlab::RunOutput> + Send,
) -> PyResult<(String, Option<Py<PyBytes>>)> {
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
        Ok(o) => o,
        Err(Error::Interrupted) => {
            return Err(match callback_error {
                Some(e) if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => e,
                _ => Interrupted::new_err("interrupted"),
            })
        }
        Err(e) => return Err(to_py(e)),
    };
    let records = out.records.map(|recs| {
        let mut buf = Vec::with_capacity(recs.len() * 32);
        for r in recs {
            for v in [r.op as u64, r.offset, r.issue_ps, r.latency_ps] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        PyBytes::new(py, &buf).unbind()
    });
    Ok((out.result.to_json(), records))
}

/// Validate a trace job given as JSON; canonical JSON back.
#[pyfunction]
fn check_trace_job(trace_json: &str) -> PyResult<String> {
    TraceJob::from_json(trace_json)
        .map(|j| j.to_json())
        .map_err(to_py)
}

fn format_opt(format: Option<&str>) -> PyResult<Option<Format>> {
    match format {
        None | Some("") | Some("auto") => Ok(None),
        Some(n) => Format::from_name(n).map(Some).ok_or_else(|| {
            TraceError::new_err(format!(
                "unknown trace format {n:?}; formats: {}",
                Format::names()
            ))
        }),
    }
}

/// Statistics of a trace file, or of `model:NAME,...`, as JSON (schema ssdlab.trace_stats/1).
/// Releases the GIL; `progress(records, 0)` is called now and then, and a KeyboardInterrupt
/// raised there stops it.
#[pyfunction]
#[pyo3(signature = (source, format=None, skip_bad_lines=false, blkparse_event="D", devices=Vec::new(), ird_block=1048576, seed=1, progress=None))]
#[allow(clippy::too_many_arguments)]
fn trace_stats(
    py: Python<'_>,
    source: &str,
    format: Option<&str>,
    skip_bad_lines: bool,
    blkparse_event: &str,
    devices: Vec<String>,
    ird_block: u64,
    seed: u64,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let event = match blkparse_event {
        "D" | "d" => trace::BlkEvent::D,
        "Q" | "q" => trace::BlkEvent::Q,
        other => {
            return Err(TraceError::new_err(format!(
                "blkparse event {other:?}: expected D (dispatch) or Q (queue)"
            )))
        }
    };
    if ird_block == 0 {
        return Err(TraceError::new_err("ird_block: expected a size above 0"));
    }
    let read = ReadOptions {
        format: format_opt(format)?,
        skip_bad_lines,
        blkparse_event: event,
    };
    let devices = trace::replay::parse_devices(&devices).map_err(to_py)?;
    let opts = StatsOptions {
        ird_block,
        ..Default::default()
    };
    let mut callback_error: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        trace::stats::of_source(source, &read, &opts, &devices, seed, &mut |n| {
            Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    callback_error = Some(e);
                    return false;
                }
                if let Some(cb) = &progress {
                    if let Err(e) = cb.call1(py, (n, 0u64)) {
                        callback_error = Some(e);
                        return false;
                    }
                }
                true
            })
        })
    });
    match out {
        Ok(report) => Ok(serde_json::to_string_pretty(&report).expect("json")),
        Err(Error::Interrupted) => Err(match callback_error {
            Some(e) if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => e,
            _ => Interrupted::new_err("interrupted"),
        }),
        Err(e) => Err(to_py(e)),
    }
}

/// The trace formats: `[{"name", "aliases", "layout", "description"}]`.
#[pyfunction]
fn trace_formats(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for f in trace::FORMATS {
        let d = PyDict::new(py);
        d.set_item("name", f.name)?;
        d.set_item("aliases", f.aliases.to_vec())?;
        d.set_item("layout", f.layout)?;
        d.set_item("description", f.description)?;
        out.push(d);
    }
    Ok(out)
}

/// The workload models: `[{"name", "aliases", "description", "source", "params_json"}]`.
#[pyfunction]
fn trace_models(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for m in trace::model::MODELS {
        let d = PyDict::new(py);
        d.set_item("name", m.name)?;
        d.set_item("aliases", m.aliases.to_vec())?;
        d.set_item("description", m.description)?;
        d.set_item("source", m.source)?;
        d.set_item(
            "params_json",
            serde_json::to_string(&(m.params)()).expect("json"),
        )?;
        out.push(d);
    }
    Ok(out)
}

/// Write a workload model's stream to a trace file; returns (written, dropped).
#[pyfunction]
#[pyo3(signature = (model, path, format="disksim", seed=1))]
fn write_model_trace(
    py: Python<'_>,
    model: &str,
    path: &str,
    format: &str,
    seed: u64,
) -> PyResult<(u64, u64)> {
    let fmt = format_opt(Some(format))?.ok_or_else(|| {
        TraceError::new_err(format!(
            "a format to write is needed; formats: {}",
            Format::names()
        ))
    })?;
    py.allow_threads(|| trace::write::write_model(model, path, fmt, seed))
        .map_err(to_py)
}

#[pyfunction]
#[pyo3(name = "bench", signature = (io_count, seed=1, overwrite=0.1))]
fn run_bench(py: Python<'_>, io_count: u64, seed: u64, overwrite: f64) -> PyResult<String> {
    let v = py
        .allow_threads(|| ssdlab::bench(io_count, seed, overwrite))
        .map_err(to_py)?;
    Ok(serde_json::to_string_pretty(&v).expect("json"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SsdlabError", py.get_type::<SsdlabError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("JobError", py.get_type::<JobError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("Interrupted", py.get_type::<Interrupted>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_toml, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(config_toml, m)?)?;
    m.add_function(wrap_pyfunction!(load_job, m)?)?;
    m.add_function(wrap_pyfunction!(check_job, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(run_trace, m)?)?;
    m.add_function(wrap_pyfunction!(check_trace_job, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_models, m)?)?;
    m.add_function(wrap_pyfunction!(write_model_trace, m)?)?;
    Ok(())
}
