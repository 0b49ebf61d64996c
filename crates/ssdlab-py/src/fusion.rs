//! The user-visible fusion device for `ssdlab.fusion` (`ssdlab::driver::fusion_host`): raw PCM
//! and NAND commands, each answered with its status and simulated times.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ssdlab::device::HardwareInfo;
use ssdlab::driver::fusion_host::{Done, FusionHost};
use ssdlab::driver::hfsl::{map::Loc, persist::TORN, HfslHost, HostDone, HostIo};
use ssdlab::sim::SimTime;
use ssdlab::SsdConfig;

use crate::errors::to_py;

fn done<'py>(py: Python<'py>, d: &Done, read: bool) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("status", d.status.name())?;
    out.set_item("submitted_ps", d.submitted.ps())?;
    out.set_item("completed_ps", d.completed.ps())?;
    out.set_item("latency_ps", d.latency().ps())?;
    if read {
        out.set_item("data", PyBytes::new(py, &d.data))?;
    }
    Ok(out)
}

/// The hardware information the fusion device's firmware publishes.
fn info_dict<'py>(py: Python<'py>, i: &HardwareInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("nand_channels", i.nand_channels)?;
    d.set_item("nand_chips_per_channel", i.nand_chips_per_channel)?;
    d.set_item("nand_page_bytes", i.nand_page_bytes)?;
    d.set_item("nand_pages_per_block", i.nand_pages_per_block)?;
    d.set_item("nand_block_bytes", i.nand_block_bytes())?;
    d.set_item("nand_blocks", i.nand_blocks)?;
    d.set_item("nand_bytes", i.nand_bytes)?;
    d.set_item("pcm_channels", i.pcm_channels)?;
    d.set_item("pcm_chips_per_channel", i.pcm_chips_per_channel)?;
    d.set_item("pcm_bytes", i.pcm_bytes)?;
    d.set_item("pcm_line_bytes", i.pcm_line_bytes)?;
    d.set_item("pcm_min_access_bytes", i.pcm_min_access_bytes)?;
    Ok(d)
}

/// Seed 002's fusion device, driven by raw commands.
#[pyclass(module = "ssdlab._core", unsendable)]
struct FusionDevice {
    host: FusionHost,
}

#[pymethods]
impl FusionDevice {
    #[new]
    #[pyo3(signature = (config_json, seed=1))]
    fn new(config_json: &str, seed: u64) -> PyResult<Self> {
        let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
        Ok(FusionDevice {
            host: FusionHost::new(&cfg, seed).map_err(to_py)?,
        })
    }

    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        info_dict(py, self.host.info())
    }

    fn now_ps(&self) -> u64 {
        self.host.now().ps()
    }

    fn erase_counts(&self) -> Vec<u32> {
        self.host.erase_counts().to_vec()
    }

    fn next_page(&self, block: u64) -> PyResult<u32> {
        self.host.next_page(block).map_err(to_py)
    }

    fn pcm_line_writes(&self, address: u64) -> PyResult<u32> {
        self.host.pcm_line_writes(address).map_err(to_py)
    }

    #[pyo3(signature = (address, length, at_ps=0))]
    fn pcm_read<'py>(
        &mut self,
        py: Python<'py>,
        address: u64,
        length: u64,
        at_ps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .host
            .pcm_read(address, length, SimTime(at_ps))
            .map_err(to_py)?;
        done(py, &d, true)
    }

    #[pyo3(signature = (address, data, at_ps=0))]
    fn pcm_write<'py>(
        &mut self,
        py: Python<'py>,
        address: u64,
        data: &[u8],
        at_ps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .host
            .pcm_write(address, data, SimTime(at_ps))
            .map_err(to_py)?;
        done(py, &d, false)
    }

    #[pyo3(signature = (page, pages=1, at_ps=0))]
    fn nand_read<'py>(
        &mut self,
        py: Python<'py>,
        page: u64,
        pages: u64,
        at_ps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .host
            .nand_read(page, pages, SimTime(at_ps))
            .map_err(to_py)?;
        done(py, &d, true)
    }

    #[pyo3(signature = (page, data, at_ps=0))]
    fn nand_program<'py>(
        &mut self,
        py: Python<'py>,
        page: u64,
        data: &[u8],
        at_ps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .host
            .nand_program(page, data, SimTime(at_ps))
            .map_err(to_py)?;
        done(py, &d, false)
    }

    #[pyo3(signature = (block, blocks=1, at_ps=0))]
    fn nand_erase<'py>(
        &mut self,
        py: Python<'py>,
        block: u64,
        blocks: u64,
        at_ps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .host
            .nand_erase(block, blocks, SimTime(at_ps))
            .map_err(to_py)?;
        done(py, &d, false)
    }
}

fn host_done<'py>(py: Python<'py>, d: &HostDone) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("submitted_ps", d.arrival.ps())?;
    out.set_item("completed_ps", d.completed.ps())?;
    out.set_item("latency_ps", d.latency().ps())?;
    out.set_item("raw_commands", d.raw_commands)?;
    out.set_item("power_cut", d.power_cut)?;
    out.set_item("acknowledged", d.acknowledged)?;
    out.set_item("version", d.version)?;
    Ok(out)
}

/// HFSL over seed 002's fusion device, one host request per call.
#[pyclass(module = "ssdlab._core", unsendable)]
struct Hfsl {
    host: HfslHost,
}

#[pymethods]
impl Hfsl {
    #[new]
    #[pyo3(signature = (config_json, logical_bytes, seed=1, track_data=false))]
    fn new(config_json: &str, logical_bytes: u64, seed: u64, track_data: bool) -> PyResult<Self> {
        let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
        Ok(Hfsl {
            host: HfslHost::new(&cfg, seed, logical_bytes, track_data).map_err(to_py)?,
        })
    }

    fn events(&self) -> u64 {
        self.host.events()
    }

    fn arm_power_cut(&mut self, event: u64) -> PyResult<()> {
        self.host.arm_power_cut(event).map_err(to_py)
    }

    fn cut_power(&mut self) -> PyResult<()> {
        self.host.cut_power().map_err(to_py)
    }

    /// The restart's report, as the `power_cut` block of a run's result.
    fn restart_json(&mut self) -> PyResult<String> {
        let r = self.host.restart().map_err(to_py)?;
        Ok(serde_json::to_string(&r.result()).expect("serialises"))
    }

    /// (simulated picoseconds, bytes written).
    fn halt(&mut self) -> PyResult<(u64, u64)> {
        let (t, bytes) = self.host.halt().map_err(to_py)?;
        Ok((t.ps(), bytes))
    }

    /// Each sub-page's write number; -1 for torn.
    fn read_back(&self, lpn: u64) -> PyResult<Vec<i64>> {
        Ok(self
            .host
            .read_back(lpn)
            .map_err(to_py)?
            .into_iter()
            .map(|v| if v == TORN { -1 } else { v as i64 })
            .collect())
    }

    fn logical_bytes(&self) -> u64 {
        self.host.logical_bytes()
    }

    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = info_dict(py, self.host.info())?;
        d.set_item("sub_page_bytes", self.host.sub_page_bytes())?;
        Ok(d)
    }

    fn now_ps(&self) -> u64 {
        self.host.now().ps()
    }

    fn erase_counts(&self) -> Vec<u32> {
        self.host.erase_counts().to_vec()
    }

    fn location(&self, lpn: u64) -> PyResult<Option<&'static str>> {
        Ok(match self.host.location(lpn).map_err(to_py)? {
            Loc::Unmapped => None,
            Loc::Nand => Some("nand"),
            Loc::Pcm => Some("pcm"),
        })
    }

    #[pyo3(signature = (write, offset, length, app=0, meta=false, at_ps=0))]
    #[allow(clippy::too_many_arguments)]
    fn submit<'py>(
        &mut self,
        py: Python<'py>,
        write: bool,
        offset: u64,
        length: u64,
        app: u32,
        meta: bool,
        at_ps: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let io = HostIo {
            write,
            offset,
            len: length,
            meta,
            app,
        };
        let d = self.host.submit(io, SimTime(at_ps)).map_err(to_py)?;
        host_done(py, &d)
    }

    /// HFSL's counts so far, as the `hfsl` block of a run's result.
    fn report_json(&self) -> String {
        let r = self.host.report();
        serde_json::json!({
            "requests": r.requests,
            "raw_commands": r.raw_commands,
            "counters": r.counters,
            "pcm_pages": r.pcm_pages,
            "nand_pages": r.nand_pages,
            "refused_writes": r.refused_writes,
            "refusals": r.refusals,
        })
        .to_string()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FusionDevice>()?;
    m.add_class::<Hfsl>()
}
