//! Configs for `ssdlab.api.Config` and the config CLI: presets, resolving and writing configs, the
//! schema, and the size grammar configs, jobs and sweeps share.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use ssdlab::SsdConfig;

use crate::errors::to_py;
use ssdlab::error::{got, Invalid};

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

/// A size as configs and jobs write it ("4KiB", "1.5MiB", "16 KiB", 4096) in bytes.
#[pyfunction]
fn parse_bytes(text: &str) -> PyResult<u64> {
    ssdlab::config::units::parse_bytes(text)
        .map_err(|p| pyo3::exceptions::PyValueError::new_err(p.to_string()))
}

/// A duration as configs and jobs write it ("10ms", "2s") in seconds.
#[pyfunction]
fn parse_duration_s(text: &str) -> PyResult<f64> {
    ssdlab::config::units::parse_duration(text)
        .map(|t| t.as_secs_f64())
        .map_err(|p| pyo3::exceptions::PyValueError::new_err(p.to_string()))
}

/// The shortest exact spelling of a size: 4096 -> "4KiB".
#[pyfunction]
fn format_bytes(count: u64) -> String {
    ssdlab::config::units::format_bytes(count)
}

/// The JSON Schema of a config file (for editors).
#[pyfunction]
fn config_schema() -> String {
    ssdlab::config::json_schema()
}

#[pyfunction]
fn preset_toml(name: &str) -> PyResult<&'static str> {
    ssdlab::config::presets::preset_toml(name).ok_or_else(|| {
        to_py(ssdlab::Error::bad_config(Invalid::unnamed(
            "preset",
            got(
                format!("{name:?}"),
                format!(
                    "one of: {}",
                    ssdlab::config::presets::preset_names().join(", ")
                ),
            ),
        )))
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

/// The bytes a job on the config may address (its logical capacity; on a fusion device, what
/// HFSL offers).
#[pyfunction]
fn job_capacity(config_json: &str) -> PyResult<u64> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    ssdlab::run::job_capacity(&cfg).map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(format_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration_s, m)?)?;
    m.add_function(wrap_pyfunction!(config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(preset_toml, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(config_toml, m)?)?;
    m.add_function(wrap_pyfunction!(job_capacity, m)?)?;
    // The bound on a config, job, fio or sweep file, for the readers on the Python side too.
    m.add(
        "MAX_CONFIG_FILE_BYTES",
        ssdlab::config::MAX_CONFIG_FILE_BYTES,
    )?;
    Ok(())
}
