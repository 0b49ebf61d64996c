//! Python bindings (`ssdlab._core`): conversions only. Every decision lives in the `ssdlab` crate.
//! One module per part of the Python package it serves; each registers its own names.

mod config;
mod errors;
mod fusion;
mod job;
mod nvme;
mod run;
mod serve;
mod swap;
mod trace;

use pyo3::prelude::*;

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    config::register(m)?;
    job::register(m)?;
    run::register(m)?;
    trace::register(m)?;
    serve::register(m)?;
    swap::register(m)?;
    fusion::register(m)?;
    nvme::register(m)
}
