//! The OS paging model (issue 12, seed 003 `003_70a51d8c1c706905.txt`): a memory-access
//! stream becomes the swap I/O a Linux kernel would issue, and that I/O drives a device.
//!
//! One file per concept:
//!
//! | file | what | kernel |
//! |---|---|---|
//! | `config.rs` | knobs, defaults and their sources, watermarks | mm/page_alloc.c `setup_per_zone_wmarks` |
//! | `memory.rs` | frames, the anonymous LRU lists, the page table | mm/swap.c, mm/vmscan.c lists |
//! | `swapfile.rs` | the swap area's slot allocator, discard | mm/swapfile.c `scan_swap_map`, `cluster_alloc_swap_entry` |
//! | `readahead.rs` | which slots a swap-in reads | mm/swap_state.c `swapin_readahead`, `swapin_nr_pages` |
//! | `sim.rs` | the simulation's state and loop on one clock, the result's figures | |
//! | `sim/fault.rs` | the application: accesses, faults, the swap cache, swap-ins and read-ahead | mm/memory.c `do_swap_page`, `do_wp_page` |
//! | `sim/io.rs` | swap requests (adjacent slots merged), discards, completions, the waits they end | mm/page_io.c |
//! | `sim/reclaim.rs` | kswapd, direct reclaim, the LRU shrinks, waits and throttles | mm/vmscan.c |
//! | `analytic.rs` | seed 003's analytic NAND cost model (merges by inter-request distance) | |
//! | `backend.rs` | the device behind: an ssdlab `Device`, or a fixed-cost one | |
//! | `workload.rs` | page-reference traces and valgrind lackey output | |
//! | `pcmix.rs` | seed 003's synthetic PC application mix (`--workload pc-mix`) | |
//! | `trace_out.rs` | the swap block trace written in a trace format ssdlab reads | |
//! | `result.rs` | the result, histograms, wear and lifetime | |
//!
//! See docs/paging.md.

pub mod analytic;
pub mod backend;
pub mod config;
pub mod memory;
pub mod pcmix;
pub mod readahead;
pub mod result;
pub mod sim;
pub mod swapfile;
pub mod trace_out;
pub mod workload;

#[cfg(test)]
mod tests;

/// One page of memory and one swap slot: 4 KiB (`PAGE_SIZE` on x86 and on the seed's ARM).
pub const PAGE_BYTES: u64 = 4096;

pub use backend::{FixedBackend, SsdBackend, SwapBackend};
pub use config::{CongestionWake, Era, FaultCosts, PagingConfig};
pub use result::{IoRecord, SwapResult};
pub use workload::Workload;

use crate::config::{BackendKind, SsdConfig};
use crate::device::Device;
use crate::error::{got, says, Invalid};

/// The origin of what a paging run reached (`paging: out of memory and swap: ...`): the run,
/// not one of its settings.
pub(crate) const PAGING: &str = "paging";
use crate::error::Result;

/// What a paging run returns: the result, each swap-in's latency (ps) and the swap trace.
pub struct SwapOutput {
    pub result: SwapResult,
    pub swap_in_ps: Vec<u64>,
    pub trace: Vec<IoRecord>,
}

/// Run `w` with `cfg` on any backend.
pub fn run_on<B: SwapBackend>(
    cfg: &PagingConfig,
    dev: B,
    w: &Workload,
    seed: u64,
) -> Result<SwapOutput> {
    run_on_with(cfg, dev, w, seed, &mut |_, _| true)
}

/// [`run_on`], calling `progress(accesses done, accesses)` now and then: returning false
/// stops the run with [`crate::Error::Interrupted`].
pub fn run_on_with<B: SwapBackend>(
    cfg: &PagingConfig,
    dev: B,
    w: &Workload,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<SwapOutput> {
    let mut sim = sim::PagingSim::new(cfg, dev, &w.accesses, w.pages, seed)?;
    sim.count_wear_from(w.wear_from);
    sim.run(progress)?;
    Ok(SwapOutput {
        result: std::mem::take(&mut sim.res),
        swap_in_ps: std::mem::take(&mut sim.swap_in_ps),
        trace: std::mem::take(&mut sim.trace),
    })
}

/// Run `w` with `cfg` on the ssdlab device `dev_cfg` (its name is `name` in the result).
pub fn run(
    dev_cfg: &SsdConfig,
    name: &str,
    cfg: &PagingConfig,
    w: &Workload,
    seed: u64,
) -> Result<SwapOutput> {
    run_on_device(dev_cfg, name, cfg, w, seed, &mut |_, _| true)
}

/// [`run`], with progress: the device preconditioned as `dev_cfg` says, as a job's is (its
/// steady state reported in the result), then paged to.
fn run_on_device(
    dev_cfg: &SsdConfig,
    name: &str,
    cfg: &PagingConfig,
    w: &Workload,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<SwapOutput> {
    let mut dev = swap_device(dev_cfg, seed)?;
    dev.precondition_with(dev_cfg, seed, progress)?;
    let steady_state = dev.steady_state_result();
    let mut out = run_on_with(cfg, SsdBackend::new(dev, name), w, seed, progress)?;
    out.result.steady_state = steady_state;
    Ok(out)
}

/// The ssdlab device a paging run pages to: `dev_cfg` without its host's CPU costs. The paging
/// model charges the kernel's software itself (`swap.cost.*`; seed 003's 12 µs "swap page
/// read" holds the block layer and the driver's submit and completion), and a device's
/// `[host]` costs model that same software for a job, so charging both counted it twice
/// (issue 40 point 4: the swap-in's device read was 17.2 µs against the seed's 10). The
/// interface (link, interrupt delivery) and the controller's firmware are the device's and
/// stay. Set up once per run, nothing on the event path.
pub fn swap_device(dev_cfg: &SsdConfig, seed: u64) -> Result<Device> {
    use crate::config::units::Dur;
    use crate::sim::SimTime;
    let mut cfg = dev_cfg.clone();
    let host = &mut cfg.host;
    host.submit_cost = Dur(SimTime::ZERO);
    host.complete_cost = Dur(SimTime::ZERO);
    host.poll_cost = Dur(SimTime::ZERO);
    host.submit_instructions = None;
    host.complete_instructions = None;
    host.poll_instructions = None;
    host.syscall_cost = None;
    host.syscall_instructions = None;
    host.fs_cost = None;
    host.fs_instructions = None;
    host.block_cost = None;
    host.block_instructions = None;
    host.sched_cost = None;
    host.sched_instructions = None;
    host.kib_cost = None;
    host.kib_instructions = None;
    Device::new(&cfg, seed)
}

/// The swap device a spec names: one of seed 003's analytic NAND parts, or an ssdlab device
/// config (a preset or TOML file with the device overrides applied).
pub enum SwapDevice {
    Analytic(analytic::NandPart),
    Ssd(Box<SsdConfig>),
}

/// A paging run resolved and checked, before anything runs: the device, the paging config
/// (the `swap.` overrides applied) and the workload (`pc-mix` or a trace file).
pub struct SwapSpec {
    pub spec: String,
    pub device: SwapDevice,
    pub cfg: PagingConfig,
    pub workload: String,
}

impl SwapSpec {
    /// Everything `ssdlab swap` would refuse, refused now (one line naming the field): the
    /// paging knobs, the device and its overrides, the swap area against the device's
    /// capacity, and a trace file that cannot be opened. The trace's contents are read (and
    /// checked line by line) only when the run starts.
    pub fn resolve(
        spec: &str,
        memory: &str,
        swap_size: &str,
        workload: &str,
        overrides: &[String],
    ) -> Result<SwapSpec> {
        let (paging_sets, device_sets): (Vec<String>, Vec<String>) = overrides
            .iter()
            .cloned()
            .partition(|o| o.trim_start().starts_with("swap."));
        let mut t = toml::Table::new();
        t.insert("memory".into(), toml::Value::String(memory.into()));
        t.insert("swap_size".into(), toml::Value::String(swap_size.into()));
        let mut doc = toml::Table::new();
        doc.insert("swap".into(), toml::Value::Table(t));
        crate::config::apply_overrides(&mut doc, &paging_sets)?;
        let Some(toml::Value::Table(t)) = doc.remove("swap") else {
            return Err(crate::error::Error::bad_paging(Invalid::unnamed(
                "swap",
                says("the overrides replaced the [swap] table (set swap.KEY=VALUE, not swap=...)"),
            )));
        };
        let cfg = PagingConfig::from_table(t)?;
        let device = if let Some(part) = analytic::part_named(spec) {
            if let Some(s) = device_sets.first() {
                return Err(crate::error::Error::bad_paging(Invalid::option_says(
                    "--set",
                    s,
                    format!(
                        "the analytic device {spec} has no device knobs (only swap.KEY=VALUE \
                         applies)"
                    ),
                )));
            }
            SwapDevice::Analytic(part)
        } else {
            let dev_cfg = SsdConfig::resolve(spec, &device_sets)?;
            let kind = dev_cfg.backend_kind();
            if matches!(
                kind,
                BackendKind::Raw | BackendKind::Fusion | BackendKind::Zoned
            ) {
                // Raw: its addresses are physical pages and blocks a host FTL manages (`ssdlab
                // serve` refuses it too); zoned: a zone takes writes only at its write
                // pointer. Either way the paging model's writes were refused mid-run.
                return Err(crate::error::Error::bad_paging(Invalid::new(
                    "swap",
                    "device",
                    got(
                        format!(
                            "`{spec}`, a {} device ({}), whose blocks a swap area cannot \
                             overwrite in place",
                            kind.name(),
                            kind.what_sections_say()
                        ),
                        "a device with an FTL (e.g. small-tlc), a PCM device or an analytic \
                         part (e.g. seed003-slc-analytic)",
                    ),
                )));
            }
            // The same test the run makes against the built device (whose capacity is the
            // config's logical bytes), made without building it.
            let end = cfg.swap_offset.0.checked_add(cfg.swap_size.0);
            if end.is_none_or(|e| e > dev_cfg.logical_bytes()) {
                return Err(crate::error::Error::bad_paging(Invalid::says(
                    "swap",
                    "swap_size",
                    format!(
                        "{} bytes at offset {} do not fit the device's {} bytes",
                        cfg.swap_size.0,
                        cfg.swap_offset.0,
                        dev_cfg.logical_bytes()
                    ),
                )));
            }
            SwapDevice::Ssd(Box::new(dev_cfg))
        };
        if workload != pcmix::NAME {
            // The message `workload::read_file` gives for the same file.
            std::fs::File::open(workload).map_err(|e| workload::unreadable(workload, &e))?;
        }
        Ok(SwapSpec {
            spec: spec.into(),
            device,
            cfg,
            workload: workload.into(),
        })
    }

    /// The run's identity as canonical JSON: the device (the analytic part's name, or the
    /// resolved device config), the paging config with every default filled in, the
    /// workload. Two specs that run the same give the same text (sweeps hash it).
    pub fn to_json(&self) -> String {
        let device = match &self.device {
            SwapDevice::Analytic(p) => serde_json::Value::String(p.name.into()),
            SwapDevice::Ssd(c) => serde_json::from_str(&c.to_json()).expect("config JSON"),
        };
        serde_json::json!({
            "device": device,
            "paging": self.cfg,
            "workload": self.workload,
        })
        .to_string()
    }

    /// Run it with `seed`.
    pub fn run(&self, seed: u64) -> Result<SwapOutput> {
        self.run_with(seed, &mut |_, _| true)
    }

    /// Run it with `seed`, calling `progress` as [`run_on_with`] does.
    pub fn run_with(
        &self,
        seed: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<SwapOutput> {
        let w = if self.workload == pcmix::NAME {
            // Generating: no total yet.
            self.cfg
                .pc_mix
                .generate_with(seed, &mut || progress(0, 0))?
        } else {
            workload::read_file(&self.workload)?
        };
        if !progress(0, w.accesses.len() as u64) {
            return Err(crate::error::Error::Interrupted);
        }
        match &self.device {
            // The analytic model has no capacity of its own: any swap area fits.
            SwapDevice::Analytic(part) => run_on_with(
                &self.cfg,
                analytic::AnalyticNand::new(*part, u64::MAX),
                &w,
                seed,
                progress,
            ),
            SwapDevice::Ssd(dev_cfg) => {
                run_on_device(dev_cfg, &self.spec, &self.cfg, &w, seed, progress)
            }
        }
    }
}

/// `ssdlab swap`: the device `spec` (a preset or TOML file, or an analytic NAND part of seed
/// 003, `seed003-slc-analytic` / `seed003-mlc-analytic`), the paging config from `memory`,
/// `swap_size` and the overrides whose key starts with `swap.` (the rest go to the device),
/// and the trace file `workload` (or `pc-mix`, the generated PC mix of seed 003).
pub fn run_spec(
    spec: &str,
    memory: &str,
    swap_size: &str,
    workload: &str,
    overrides: &[String],
    seed: u64,
) -> Result<SwapOutput> {
    SwapSpec::resolve(spec, memory, swap_size, workload, overrides)?.run(seed)
}
