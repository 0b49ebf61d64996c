//! Python bindings: conversions only. Every decision lives in the `ssdlab` crate.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
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
    let mut callback_error: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        ssdlab::run(&cfg, &job, &opts, &mut |done, total| {
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
    Ok(())
}
