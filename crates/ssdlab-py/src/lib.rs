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

/// The JSON Schema of a config file (for editors).
#[pyfunction]
fn config_schema() -> String {
    ssdlab::config::json_schema()
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

// ------------------------------------------------------------------------------------------
// The register-level NVMe controller (`ssdlab::nvme`): a device brought up by the host driver
// model, its MMIO, config space and host memory, and the driver's helpers.

fn nvme_value(py: Python<'_>, v: &ssdlab::driver::nvme_regs::structs::Value) -> PyResult<PyObject> {
    use ssdlab::driver::nvme_regs::structs::Value;
    Ok(match v {
        Value::Int(n) => n.into_pyobject(py)?.into_any().unbind(),
        Value::Str(s) => s.into_pyobject(py)?.into_any().unbind(),
        Value::List(items) => {
            let list = pyo3::types::PyList::empty(py);
            for f in items {
                list.append(nvme_fields(py, f)?)?;
            }
            list.into_any().unbind()
        }
    })
}

fn nvme_fields<'py>(
    py: Python<'py>,
    fields: &ssdlab::driver::nvme_regs::structs::Fields,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in fields {
        d.set_item(*k, nvme_value(py, v)?)?;
    }
    Ok(d)
}

fn nvme_done<'py>(
    py: Python<'py>,
    d: &ssdlab::driver::nvme_regs::host_driver::Done,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("cid", d.cqe.cid)?;
    out.set_item("status", d.cqe.status.field() >> 1)?;
    out.set_item("status_name", d.cqe.status.name())?;
    out.set_item("dw0", d.cqe.dw0)?;
    out.set_item("submitted_ps", d.submitted.ps())?;
    out.set_item("completed_ps", d.completed.ps())?;
    out.set_item("latency_ps", d.latency().ps())?;
    Ok(out)
}

fn nvme_summary<'py>(
    py: Python<'py>,
    s: &ssdlab::driver::nvme_regs::workload::Summary,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("requests", s.requests)?;
    d.set_item("commands", s.commands)?;
    d.set_item("reads", s.reads)?;
    d.set_item("writes", s.writes)?;
    d.set_item("deallocates", s.deallocates)?;
    d.set_item("flushes", s.flushes)?;
    d.set_item("bytes_read", s.bytes_read)?;
    d.set_item("bytes_written", s.bytes_written)?;
    d.set_item("errors", s.errors)?;
    d.set_item("start_ps", s.start.ps())?;
    d.set_item("end_ps", s.end.ps())?;
    Ok(d)
}

/// An NVMe device brought up through its registers by the host driver model.
#[pyclass(module = "ssdlab._core", unsendable)]
struct NvmeDevice {
    drv: ssdlab::driver::nvme_regs::HostDriver,
    seed: u64,
}

#[pymethods]
impl NvmeDevice {
    #[new]
    #[pyo3(signature = (config_json, seed=1, lba_size=4096, queue_depth=1024))]
    fn new(config_json: &str, seed: u64, lba_size: u32, queue_depth: u32) -> PyResult<Self> {
        let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
        let opts = ssdlab::driver::nvme_regs::NvmeOptions { lba_size, seed };
        let ctrl = ssdlab::driver::nvme_regs::Controller::new(&cfg, &opts).map_err(to_py)?;
        let drv = ssdlab::driver::nvme_regs::HostDriver::bring_up(
            ctrl,
            queue_depth,
            cfg.interface.interrupt,
        )
        .map_err(to_py)?;
        Ok(NvmeDevice { drv, seed })
    }

    #[pyo3(signature = (offset, size=4))]
    fn mmio_read(&self, offset: u64, size: u8) -> u64 {
        self.drv.ctrl.mmio_read(offset, size)
    }
    #[pyo3(signature = (offset, value, size=4))]
    fn mmio_write(&mut self, offset: u64, value: u64, size: u8) {
        self.drv.ctrl.mmio_write(offset, size, value)
    }
    #[pyo3(signature = (offset, size=4))]
    fn config_read(&mut self, offset: u32, size: u8) -> u32 {
        self.drv.ctrl.config_read(offset, size)
    }
    #[pyo3(signature = (offset, value, size=4))]
    fn config_write(&mut self, offset: u32, value: u32, size: u8) {
        self.drv.ctrl.config_write(offset, size, value)
    }
    fn mem_read<'py>(&self, py: Python<'py>, addr: u64, length: usize) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.drv.ctrl.mem.read_vec(addr, length))
    }
    fn mem_write(&mut self, addr: u64, data: &[u8]) {
        self.drv.ctrl.mem.write(addr, data)
    }

    /// Identify (CNS, NSID): the raw 4096 bytes.
    #[pyo3(signature = (cns, nsid=0))]
    fn identify<'py>(
        &mut self,
        py: Python<'py>,
        cns: u32,
        nsid: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.drv.identify(cns, nsid).map_err(to_py)?;
        Ok(PyBytes::new(py, &b))
    }
    /// Get Log Page `lid`, `length` bytes.
    fn get_log<'py>(
        &mut self,
        py: Python<'py>,
        lid: u8,
        length: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.drv.get_log(lid, length).map_err(to_py)?;
        Ok(PyBytes::new(py, &b))
    }
    fn id_ctrl<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = self.drv.identify(1, 0).map_err(to_py)?;
        nvme_fields(py, &ssdlab::driver::nvme_regs::structs::decode_id_ctrl(&b))
    }
    #[pyo3(signature = (nsid=1))]
    fn id_ns<'py>(&mut self, py: Python<'py>, nsid: u32) -> PyResult<Bound<'py, PyDict>> {
        let b = self.drv.identify(0, nsid).map_err(to_py)?;
        nvme_fields(py, &ssdlab::driver::nvme_regs::structs::decode_id_ns(&b))
    }
    fn smart_log<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = self.drv.smart_log().map_err(to_py)?;
        nvme_fields(py, &ssdlab::driver::nvme_regs::structs::decode_smart(&b))
    }

    fn read<'py>(&mut self, py: Python<'py>, slba: u64, nlb: u32) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.drv.read(slba, nlb).map_err(to_py)?;
        Ok(PyBytes::new(py, &b))
    }
    fn write<'py>(
        &mut self,
        py: Python<'py>,
        slba: u64,
        data: &[u8],
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self.drv.write(slba, data).map_err(to_py)?;
        nvme_done(py, &d)
    }
    fn flush<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = self.drv.flush().map_err(to_py)?;
        nvme_done(py, &d)
    }
    fn deallocate<'py>(
        &mut self,
        py: Python<'py>,
        slba: u64,
        nlb: u32,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self.drv.deallocate(slba, nlb).map_err(to_py)?;
        nvme_done(py, &d)
    }
    /// Run a job (JSON of a job spec) through the driver.
    fn run_job<'py>(&mut self, py: Python<'py>, job_json: &str) -> PyResult<Bound<'py, PyDict>> {
        let spec = JobSpec::from_json(job_json).map_err(to_py)?;
        let s = ssdlab::driver::nvme_regs::workload::run_job(&mut self.drv, &spec, self.seed)
            .map_err(to_py)?;
        nvme_summary(py, &s)
    }
    /// Replay a trace file through the driver.
    #[pyo3(signature = (path, format=None, iodepth=32, limit=None))]
    fn run_trace<'py>(
        &mut self,
        py: Python<'py>,
        path: &str,
        format: Option<&str>,
        iodepth: u32,
        limit: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = ReadOptions {
            format: format_opt(format)?,
            ..Default::default()
        };
        let s = ssdlab::driver::nvme_regs::workload::run_trace(
            &mut self.drv,
            path,
            &opts,
            iodepth,
            limit,
        )
        .map_err(to_py)?;
        nvme_summary(py, &s)
    }

    #[getter]
    fn clock_ps(&self) -> u64 {
        self.drv.ctrl.clock().ps()
    }
    #[getter]
    fn serial(&self) -> String {
        self.drv.ctrl.serial().to_string()
    }
    #[getter]
    fn model(&self) -> String {
        self.drv.ctrl.model().to_string()
    }
    #[getter]
    fn lba_size(&self) -> u64 {
        self.drv.lba_size()
    }
    #[getter]
    fn nsze(&self) -> u64 {
        self.drv.nsze()
    }
    #[getter]
    fn blocks_in_use(&self) -> u64 {
        self.drv.ctrl.blocks_in_use()
    }
    #[getter]
    fn max_transfer(&self) -> u64 {
        self.drv.max_transfer()
    }
    #[getter]
    fn intx(&self) -> bool {
        self.drv.ctrl.intx()
    }
    #[getter]
    fn msix_messages(&self) -> Vec<(u64, u16, u64, u32)> {
        self.drv
            .ctrl
            .msix_messages()
            .iter()
            .map(|m| (m.time.ps(), m.vector, m.addr, m.data))
            .collect()
    }
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
    m.add_class::<NvmeDevice>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_toml, m)?)?;
    m.add_function(wrap_pyfunction!(config_schema, m)?)?;
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
