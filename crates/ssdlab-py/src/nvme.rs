//! The register-level NVMe controller for `ssdlab.nvme` (`ssdlab::driver::nvme_regs`): a device
//! brought up by the host driver model, its MMIO, config space and host memory, and the driver's
//! helpers.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ssdlab::error::{got, Invalid};
use ssdlab::workload::trace::ReadOptions;
use ssdlab::{JobSpec, SsdConfig};

use crate::errors::{to_py, to_py_signalled};

/// The device holds the GIL while it runs (it is not `Send`), so signal handlers are run here
/// directly; Ctrl-C raises KeyboardInterrupt there, kept in `raised`.
fn signal_free(py: Python<'_>, raised: &mut Option<PyErr>) -> bool {
    match py.check_signals() {
        Ok(()) => true,
        Err(e) => {
            *raised = Some(e);
            false
        }
    }
}
use crate::trace::format_opt;

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
    out.set_item("dw1", d.cqe.dw1)?;
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
    d.set_item("zone_commands", s.zone_commands)?;
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
    /// An FDP log page (`configs`, `usage`, `stats` or `events`) with nvme-cli's JSON keys;
    /// `host_events`: the events page's host events (else its controller events).
    #[pyo3(signature = (page, host_events=false))]
    fn fdp_log<'py>(
        &mut self,
        py: Python<'py>,
        page: &str,
        host_events: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        use ssdlab::driver::nvme_regs::structs as st;
        type Decode = fn(&[u8]) -> st::Fields;
        let (lid, len, decode): (u8, u32, Decode) = match page {
            "configs" => (0x20, 4096, st::decode_fdp_configs),
            "usage" => (0x21, 4096, st::decode_fdp_usage),
            "stats" => (0x22, 64, st::decode_fdp_stats),
            "events" => (0x23, 4096, st::decode_fdp_events),
            _ => {
                return Err(to_py(ssdlab::Error::bad_job(Invalid::unnamed(
                    "FDP log page",
                    got(format!("{page:?}"), "configs, usage, stats or events"),
                ))))
            }
        };
        if !self.drv.fdp_supported() {
            return Err(to_py(ssdlab::Error::bad_config(Invalid::says("", "fdp", "the drive has no Flexible Data Placement, expected a config with an [fdp] section (docs/fdp.md)"))));
        }
        let b = self.drv.fdp_log(lid, len, host_events).map_err(to_py)?;
        nvme_fields(py, &decode(&b))
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
    /// The ZNS Identify Namespace (CNS 05h, CSI 02h) with nvme-cli's `zns id-ns` keys.
    fn zns_id_ns<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let ns = self.drv.identify(0, 1).map_err(to_py)?;
        let nlbaf = ns[ssdlab::driver::nvme_regs::structs::ns_off::NLBAF] as usize;
        let b = self.drv.identify_csi(0x05, 1, 0x02).map_err(to_py)?;
        nvme_fields(
            py,
            &ssdlab::driver::nvme_regs::structs::decode_zns_id_ns(&b, nlbaf),
        )
    }
    /// The ZNS Identify Controller (CNS 06h, CSI 02h) with nvme-cli's `zns id-ctrl` keys.
    fn zns_id_ctrl<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = self.drv.identify_csi(0x06, 0, 0x02).map_err(to_py)?;
        nvme_fields(
            py,
            &ssdlab::driver::nvme_regs::structs::decode_zns_id_ctrl(&b),
        )
    }
    /// Report Zones from the zone of `slba`, zones in the state `option` selects (0 all, 1–7
    /// one state), at most `max_zones`, as nvme-cli's `zns report-zones` JSON: as many Zone
    /// Management Receive commands as the largest transfer needs (as nvme-cli issues them),
    /// each from the zone after the last one reported. `nr_zones` is the header's count of
    /// the first command: every matching zone, or with `partial` those returned.
    #[pyo3(signature = (slba=0, option=0, partial=false, max_zones=u64::MAX))]
    fn report_zones<'py>(
        &mut self,
        py: Python<'py>,
        slba: u64,
        option: u8,
        partial: bool,
        max_zones: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        use ssdlab::driver::nvme_regs::host_driver::{check, HostDriver};
        use ssdlab::driver::nvme_regs::structs::{decode_report_zones, Value};
        let per_command = (self.drv.max_transfer().min(2 << 20) - 64) / 64;
        let zone_lbas = {
            let ns = self.drv.identify(0, 1).map_err(to_py)?;
            let flbas = (ns[ssdlab::driver::nvme_regs::structs::ns_off::FLBAS] & 0xF) as usize;
            let z = self.drv.identify_csi(0x05, 1, 0x02).map_err(to_py)?;
            u64::from_le_bytes(
                z[2816 + 16 * flbas..2824 + 16 * flbas]
                    .try_into()
                    .unwrap_or([0; 8]),
            )
        };
        let mut list: Vec<ssdlab::driver::nvme_regs::structs::Fields> = Vec::new();
        let mut nr_zones: Option<u128> = None;
        let mut from = slba;
        let drv: &mut HostDriver = &mut self.drv;
        while (list.len() as u64) < max_zones {
            let want = per_command.min(max_zones - list.len() as u64);
            let (b, done) = drv
                .report_zones(from, option, partial, 64 + 64 * want)
                .map_err(to_py)?;
            check(&done.cqe, "Zone Management Receive (Report Zones)").map_err(to_py)?;
            let mut fields = decode_report_zones(&b);
            let (Some((_, Value::List(mut zones))), Some((_, Value::Int(n)))) =
                (fields.pop(), fields.pop())
            else {
                break;
            };
            nr_zones.get_or_insert(n);
            let last = zones.last().and_then(|z| match z[0].1 {
                Value::Int(s) => Some(s as u64),
                _ => None,
            });
            let got = zones.len() as u64;
            list.append(&mut zones);
            match last {
                Some(s) if got == want && s + zone_lbas < drv.nsze() => from = s + zone_lbas,
                _ => break,
            }
        }
        let n = if partial {
            list.len() as u128
        } else {
            nr_zones.unwrap_or(0)
        };
        nvme_fields(
            py,
            &vec![
                ("nr_zones", Value::Int(n)),
                ("zone_list", Value::List(list)),
            ],
        )
    }
    /// Zone Management Send: `action` (1 close, 2 finish, 3 open, 4 reset, 5 offline) on the
    /// zone starting at `slba`, or on every zone with `select_all`; the completion (a refused
    /// action's status is the drive's answer, not an exception).
    #[pyo3(signature = (slba, action, select_all=false))]
    fn zone_mgmt_send<'py>(
        &mut self,
        py: Python<'py>,
        slba: u64,
        action: u8,
        select_all: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .drv
            .zone_mgmt_send(slba, action, select_all)
            .map_err(to_py)?;
        nvme_done(py, &d)
    }
    /// Zone Append `data` to the zone starting at `zslba`: the completion, with `lba` (where
    /// the data went) when it succeeded.
    fn zone_append<'py>(
        &mut self,
        py: Python<'py>,
        zslba: u64,
        data: &[u8],
    ) -> PyResult<Bound<'py, PyDict>> {
        use ssdlab::driver::nvme_regs::host_driver::appended_lba;
        let d = self.drv.zone_append(zslba, data).map_err(to_py)?;
        let out = nvme_done(py, &d)?;
        if d.cqe.status.is_success() {
            out.set_item("lba", appended_lba(&d))?;
        }
        Ok(out)
    }

    /// Run a job (JSON of a job spec) through the driver.
    fn run_job<'py>(&mut self, py: Python<'py>, job_json: &str) -> PyResult<Bound<'py, PyDict>> {
        let spec = JobSpec::from_json(job_json).map_err(to_py)?;
        let mut raised = None;
        let s = ssdlab::driver::nvme_regs::workload::run_job_with(
            &mut self.drv,
            &spec,
            self.seed,
            &mut || signal_free(py, &mut raised),
        )
        .map_err(|e| to_py_signalled(py, e, raised.take()))?;
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
        let mut raised = None;
        let s = ssdlab::driver::nvme_regs::workload::run_trace_with(
            &mut self.drv,
            path,
            &opts,
            iodepth,
            limit,
            &mut || signal_free(py, &mut raised),
        )
        .map_err(|e| to_py_signalled(py, e, raised.take()))?;
        nvme_summary(py, &s)
    }

    /// Whether namespace 1 is zoned (the Zoned Namespace Command Set).
    #[getter]
    fn zoned(&self) -> bool {
        self.drv.ctrl.is_zoned()
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
    /// Wall seconds the config's `[precondition]` took when the device was built.
    #[getter]
    fn precondition_seconds(&self) -> f64 {
        self.drv.ctrl.precondition_seconds()
    }
    /// What a `fill = "steady-state"` preconditioning reached (a job result's
    /// `device.steady_state`), or None.
    #[getter]
    fn steady_state<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = self.drv.ctrl.device().steady_state_result() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("write_amplification", s.write_amplification)?;
        d.set_item("converged", s.converged)?;
        d.set_item("overwrite", s.overwrite)?;
        if let Some(m) = s.merges_per_host_page {
            d.set_item("merges_per_host_page", m)?;
        }
        Ok(Some(d))
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NvmeDevice>()
}
