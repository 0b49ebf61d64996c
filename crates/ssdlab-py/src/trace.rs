//! Traces for `ssdlab.api.Trace` and the trace CLI: checking trace jobs, statistics, the formats
//! and workload models, and writing a model's stream.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use ssdlab::workload::trace::{self, replay::TraceJob, stats::StatsOptions, Format, ReadOptions};
use ssdlab::Error;

use crate::errors::{no_signal, to_py, to_py_signalled, Interrupted};
use ssdlab::error::Invalid;

/// A bad argument of a trace function (`trace_stats`'s, `write_model_trace`'s): the argument as
/// the field, its value and what was expected.
fn bad_argument(
    origin: &str,
    field: &str,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> PyErr {
    to_py(Error::bad_trace(Invalid::got(
        origin, field, value, expected,
    )))
}

/// Validate a trace job given as JSON; canonical JSON back.
#[pyfunction]
fn check_trace_job(trace_json: &str) -> PyResult<String> {
    TraceJob::from_json(trace_json)
        .map(|j| j.to_json())
        .map_err(to_py)
}

pub(crate) fn format_opt(format: Option<&str>) -> PyResult<Option<Format>> {
    match format {
        None | Some("") | Some("auto") => Ok(None),
        Some(n) => Format::from_name(n).map(Some).ok_or_else(|| {
            bad_argument(
                "trace",
                "format",
                format!("{n:?}"),
                format!("one of: {}", Format::names()),
            )
        }),
    }
}

/// Statistics of a trace file, or of `model:NAME,...`, as JSON (schema ssdlab.trace_stats/1).
/// Releases the GIL; `progress(records, 0)` is called now and then, and a KeyboardInterrupt
/// raised there stops it.
#[pyfunction]
#[pyo3(signature = (source, format=None, skip_bad_lines=false, blkparse_event="D", devices=Vec::new(), ird_block=1048576, seed=1, progress=None, sample_points=0, lba_bytes=None))]
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
    sample_points: usize,
    lba_bytes: Option<u64>,
) -> PyResult<String> {
    let event = match blkparse_event {
        "D" | "d" => trace::BlkEvent::D,
        "Q" | "q" => trace::BlkEvent::Q,
        other => {
            return Err(bad_argument(
                "trace stats",
                "blkparse_event",
                format!("{other:?}"),
                "D (dispatch) or Q (queue)",
            ))
        }
    };
    if ird_block == 0 {
        return Err(bad_argument(
            "trace stats",
            "ird_block",
            0,
            "a size above 0",
        ));
    }
    let format = format_opt(format)?;
    if let Some(b) = lba_bytes {
        if !(512..=65536).contains(&b) || !b.is_power_of_two() {
            return Err(bad_argument(
                "trace stats",
                "lba_bytes",
                b,
                "a power of two from 512 to 65536 (the namespace's logical block size)",
            ));
        }
        if format.is_some_and(|f| f != trace::Format::Nvme) {
            return Err(bad_argument(
                "trace stats",
                "lba_bytes",
                format!(
                    "{b} with format {:?}",
                    format.map(|f| f.name()).unwrap_or_default()
                ),
                "none: only nvme traces count in logical blocks",
            ));
        }
    }
    let read = ReadOptions {
        format,
        skip_bad_lines,
        blkparse_event: event,
        lba_bytes,
    };
    let devices = trace::replay::parse_devices(&devices).map_err(to_py)?;
    let opts = StatsOptions {
        ird_block,
        sample_points,
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
        bad_argument(
            "trace",
            "format",
            format!("{format:?}"),
            format!("a format to write: one of {}", Format::names()),
        )
    })?;
    let mut raised = None;
    py.allow_threads(|| {
        trace::write::write_model_with(model, path, fmt, seed, &mut || no_signal(&mut raised))
    })
    .map_err(|e| to_py_signalled(py, e, raised.take()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_trace_job, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(trace_models, m)?)?;
    m.add_function(wrap_pyfunction!(write_model_trace, m)?)?;
    Ok(())
}
