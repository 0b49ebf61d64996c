//! Jobs for `ssdlab.api.Job`: reading and checking job files, and the names Python takes from the
//! core (the operations and the job's fields).

use pyo3::prelude::*;
use ssdlab::JobSpec;

use crate::errors::to_py;

/// Names of the request operations, by their code in the per-request records.
#[pyfunction]
fn op_names() -> Vec<&'static str> {
    ssdlab::request::Op::ALL.iter().map(|o| o.name()).collect()
}

/// The job's fields, in order.
#[pyfunction]
fn job_fields() -> Vec<&'static str> {
    JobSpec::FIELDS.to_vec()
}

#[pyfunction]
fn load_job(path: &str) -> PyResult<String> {
    let text = ssdlab::config::read_small_text_file(path, "job file")
        .map_err(|i| to_py(ssdlab::Error::Job(ssdlab::JobError::Invalid(i))))?;
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(op_names, m)?)?;
    m.add_function(wrap_pyfunction!(job_fields, m)?)?;
    m.add_function(wrap_pyfunction!(load_job, m)?)?;
    m.add_function(wrap_pyfunction!(check_job, m)?)?;
    Ok(())
}
