//! The combination matrix (issue 46 point 2): the parts of a device with each other, through
//! every driver. Seven axes — back end, cache buffer, mapping, reliability, interface,
//! preconditioning, driver — and every pair of values of two axes:
//! - a pair the model takes appears in at least one legal combination (a pairwise covering
//!   array of legal combinations, built greedily below), which runs a short job through its
//!   driver on a small geometry, checked by the data oracle where the driver lets the test
//!   reach it, repeated for byte-identical results, with each configured part's figures in its
//!   result;
//! - a pair the model refuses is tried with every other axis at its first value, and must be
//!   refused in one line that holds the words [`REFUSED`] lists for it (naming both parts);
//!   every documented pair must be met so.
//!
//! Legality is the validator's answer at run time plus [`DRIVER_REFUSED`], the pairs a driver
//! cannot carry (docs/combinations.md gives each its reason and source). A pair the validator
//! lifts becomes legal here without a change to this test's generator; its entry in
//! [`REFUSED`] then fails the test until removed.
//!
//! `SSDLAB_MATRIX_OUT=path` writes the matrix (every combination and its outcome) as JSON:
//! docs/generated/combination-matrix.json, which docs/combinations.md renders.

// Axes and values are numbered: the covering array is built over indices.
#![allow(clippy::needless_range_loop)]

mod common;

use ssdlab::device::Device;
use ssdlab::driver::jobs::JobDriver;
use ssdlab::driver::replay::ReplayDriver;
use ssdlab::workload::trace::replay::{Replay, TraceJob};
use ssdlab::{JobSpec, RunOptions, SsdConfig};
use std::collections::BTreeSet;

/// The axes and their values, in order.
const AXES: [(&str, &[&str]); 7] = [
    (
        "backend",
        &[
            "page", "block", "bast", "fast", "raw", "zoned", "pcm", "fdp",
        ],
    ),
    (
        "cache",
        &[
            "none",
            "single-lru-write-back",
            "single-clock-write-through",
            "dual-fifo-write-back",
            "dual-lru-write-through",
        ],
    ),
    ("mapping", &["full", "cached-dram", "cached-hmb"]),
    ("reliability", &["off", "on"]),
    ("interface", &["nvme", "sata", "ufs", "emmc", "ide"]),
    ("precondition", &["none", "sequential", "steady-state"]),
    ("driver", &["job", "replay", "nvme-regs", "serve", "paging"]),
];

/// Pairs the model refuses, each with what the refusal must name and why (the docs give the
/// source): `(axis a = value, axis b = value, words the one-line error holds, reason)`. A value
/// of `"*"` is any value but the axis's first ("none", "off", "full").
const REFUSED: &[(&str, &str, &[&str], &str)] = &[
    (
        "backend=raw",
        "cache=*",
        &["cache", "ftl.kind"],
        "physical: no logical blocks to cache",
    ),
    (
        "backend=raw",
        "mapping=*",
        &["ftl.mapping", "ftl.kind = \"none\""],
        "physical: a raw device has no map",
    ),
    (
        "backend=raw",
        "reliability=on",
        &["reliability", "ftl.kind = \"none\""],
        "physical: the driver owns retirement",
    ),
    (
        "backend=raw",
        "precondition=*",
        &["precondition", "ftl.kind = \"none\""],
        "physical: the driver prepares the media",
    ),
    (
        "backend=zoned",
        "mapping=*",
        &["ftl.mapping", "ftl.kind = \"none\""],
        "physical: a zoned drive keeps no map",
    ),
    (
        "backend=zoned",
        "precondition=*",
        &["precondition", "ftl.kind = \"none\""],
        "physical: the host writes zones in order",
    ),
    (
        "backend=block",
        "mapping=*",
        &["ftl.mapping", "block-mapped"],
        "design: a block map is small enough to keep whole",
    ),
    (
        "backend=bast",
        "mapping=*",
        &["ftl.mapping", "block-mapped"],
        "design: a block map is small enough to keep whole",
    ),
    (
        "backend=fast",
        "mapping=*",
        &["ftl.mapping", "block-mapped"],
        "design: a block map is small enough to keep whole",
    ),
    (
        "backend=pcm",
        "mapping=*",
        &["field `ftl`", "[pcm] and no [nand]"],
        "physical: PCM is updated in place, no map",
    ),
    (
        "backend=pcm",
        "reliability=on",
        &["reliability", "PCM-only"],
        "physical: PCM endurance is [pcm]'s",
    ),
    (
        "backend=pcm",
        "precondition=steady-state",
        &["steady-state", "PCM-only"],
        "physical: PCM is updated in place, no FTL to age",
    ),
    (
        "backend=fdp",
        "interface=*",
        &["interface.kind", "[fdp]"],
        "protocol: FDP is an NVMe directive",
    ),
    (
        "mapping=cached-hmb",
        "interface=*",
        &["hmb", "interface.kind"],
        "physical: a Host Memory Buffer is NVMe's",
    ),
];

/// Pairs a driver refuses when it starts (not the config's validator): same form as
/// [`REFUSED`].
const DRIVER_REFUSED: &[(&str, &str, &[&str], &str)] = &[
    ("backend=raw", "driver=serve", &["no logical blocks to export", "ftl.kind = \"none\""], "physical: no logical blocks to export"),
    ("backend=raw", "driver=paging", &["swap device", "programs are whole pages"], "physical: no logical blocks to swap to"),
    ("backend=raw", "driver=nvme-regs", &["Write at LBA", "Internal Error"], "physical: raw NAND programs erased pages whole; the byte workload writes 4 KiB blocks in place"),
    ("backend=zoned", "driver=serve", &["zoned drive", "NBD"], "protocol: NBD has no zone commands"),
    ("backend=zoned", "driver=paging", &["Zone Invalid Write"], "protocol: a swap area is written anywhere, a zone only at its write pointer"),
    ("interface=*", "driver=nvme-regs", &["interface.kind", "nvme"], "physical: the register-level driver is an NVMe host"),
];

/// One combination: a value index per axis.
type Combo = [usize; 7];

fn value(c: &Combo, axis: usize) -> &'static str {
    AXES[axis].1[c[axis]]
}

fn name(c: &Combo) -> String {
    (0..7)
        .map(|a| format!("{}={}", AXES[a].0, value(c, a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a documented pair `(a, b)` holds in `c` (`"*"`: any value but the axis's first).
fn holds(c: &Combo, spec: &str) -> bool {
    let (axis, want) = spec.split_once('=').unwrap();
    let a = AXES.iter().position(|(n, _)| *n == axis).unwrap();
    if want == "*" {
        c[a] != 0
    } else {
        value(c, a) == want
    }
}

/// Whether the model takes combination `c`: the validator accepts its config and no driver
/// refuses it.
fn legal(c: &Combo) -> bool {
    let (preset, ov) = config(c);
    SsdConfig::resolve(preset, &ov).is_ok()
        && !DRIVER_REFUSED
            .iter()
            .any(|(a, b, _, _)| holds(c, a) && holds(c, b))
}

/// The combination of values `fixed` (axis, value) with every other axis at its first value.
fn with_defaults(fixed: &[(usize, usize)]) -> Combo {
    let mut c = [0; 7];
    for &(a, v) in fixed {
        c[a] = v;
    }
    c
}

/// Every pair of values of two axes: (axis a, value, axis b, value), a < b.
fn all_pairs() -> Vec<(usize, usize, usize, usize)> {
    let n = AXES.len();
    let mut out = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            for va in 0..AXES[a].1.len() {
                for vb in 0..AXES[b].1.len() {
                    out.push((a, va, b, vb));
                }
            }
        }
    }
    out
}

/// A pairwise covering array of legal combinations for the legal pairs: combinations are
/// added greedily, each seeded with the first pair not yet covered and filled axis by axis with
/// the value that covers most pairs not yet covered while the combination (its other axes at
/// their first values) stays legal; ties go to the lowest index, so the array is fixed.
fn pairwise(legal_pairs: &[(usize, usize, usize, usize)]) -> Vec<Combo> {
    let n = AXES.len();
    let mut uncovered: BTreeSet<(usize, usize, usize, usize)> =
        legal_pairs.iter().copied().collect();
    let mut out = Vec::new();
    while let Some(&(a0, va0, b0, vb0)) = uncovered.iter().next() {
        let mut c: [Option<usize>; 7] = [None; 7];
        c[a0] = Some(va0);
        c[b0] = Some(vb0);
        for axis in 0..n {
            if c[axis].is_some() {
                continue;
            }
            let gain = |v: usize| {
                (0..n)
                    .filter_map(|o| c[o].map(|vo| (o, vo)))
                    .filter(|&(o, vo)| {
                        let key = if o < axis {
                            (o, vo, axis, v)
                        } else {
                            (axis, v, o, vo)
                        };
                        uncovered.contains(&key)
                    })
                    .count()
            };
            let mut order: Vec<usize> = (0..AXES[axis].1.len()).collect();
            order.sort_by_key(|&v| (std::cmp::Reverse(gain(v)), v));
            // The first value is legal: the seed pair with every other axis at its first value is.
            let pick = order
                .into_iter()
                .find(|&v| {
                    let mut t = c;
                    t[axis] = Some(v);
                    legal(&t.map(|x| x.unwrap_or(0)))
                })
                .unwrap_or(0);
            c[axis] = Some(pick);
        }
        let c: Combo = c.map(|v| v.unwrap());
        for a in 0..n {
            for b in a + 1..n {
                uncovered.remove(&(a, c[a], b, c[b]));
            }
        }
        out.push(c);
    }
    out
}

/// The config overrides of a combination, on its base preset.
fn config(c: &Combo) -> (&'static str, Vec<String>) {
    let mut ov: Vec<String> = Vec::new();
    let mut set = |s: &str| ov.push(s.to_string());
    let preset = match value(c, 0) {
        "zoned" => "zns-tlc",
        "pcm" => "pcm-micron-p8p",
        _ => "small-tlc",
    };
    let nand = preset != "pcm-micron-p8p";
    if preset == "small-tlc" {
        // 4 planes of 80 blocks of 16 pages (80 MiB raw): runs and preconditioning take
        // milliseconds; the GC threshold (3 %) is still two blocks.
        set("nand.channels=2");
        set("nand.dies_per_package=1");
        set("nand.blocks_per_plane=80");
        set("nand.pages_per_block=16");
    }
    match value(c, 0) {
        "block" | "bast" | "fast" => {
            set(&format!("ftl.kind=\"{}\"", value(c, 0)));
            set("ftl.map_unit=\"16KiB\"");
            set("ftl.over_provisioning=0.5");
            match value(c, 0) {
                "bast" => set("ftl.log_blocks=2"),
                "fast" => set("ftl.log_blocks=3"),
                _ => {}
            }
        }
        "raw" => {
            set("ftl.kind=\"none\"");
            set("ftl.over_provisioning=0.0");
        }
        // The page FTL with two placement handles (docs/fdp.md); the job's writes take them
        // in turn.
        "fdp" => set("fdp.handles=2"),
        _ => {}
    }
    let cache = value(c, 1);
    if cache != "none" {
        let mut parts = cache.splitn(3, '-');
        let (ports, policy, mode) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        set("cache.capacity=\"256KiB\"");
        set("cache.dram=\"ddr2\"");
        set(&format!("cache.ports=\"{ports}\""));
        set(&format!("cache.replacement=\"{policy}\""));
        set(&format!("cache.mode=\"{mode}\""));
    }
    match value(c, 2) {
        "cached-dram" => {
            set("ftl.mapping=\"cached\"");
            set("ftl.mapping_cache=\"16KiB\"");
        }
        "cached-hmb" => {
            set("ftl.mapping=\"cached\"");
            set("ftl.mapping_cache=\"16KiB\"");
            set("ftl.mapping_cache_location=\"hmb\"");
        }
        _ => {}
    }
    if value(c, 3) == "on" {
        set("reliability.pe_limit=3000");
    }
    let iface = value(c, 4);
    if iface != "nvme" {
        set(&format!("interface.kind=\"{iface}\""));
    }
    // The preset's own random overwrite (small-tlc: half the drive) is left out: the axis is
    // the fill.
    if nand && preset == "small-tlc" {
        set("precondition.random_overwrite=0.0");
    }
    match value(c, 5) {
        "none" if preset == "small-tlc" => set("precondition.fill=\"none\""),
        "none" => {}
        fill => set(&format!("precondition.fill=\"{fill}\"")),
    }
    (preset, ov)
}

/// What a legal combination's run gave: its result without wall time, and the data oracle's
/// verdict where the driver let the test hold the device (reads checked).
struct Ran {
    result: serde_json::Value,
    checked_reads: Option<u64>,
}

const JOB: &str =
    "rw = \"randrw\"\nrwmixread = 50\nbs = \"16KiB\"\niodepth = 4\nsize = \"2MiB\"\nio_count = 300";

/// On an FDP drive the job's writes take its two placement handles in turn.
const FDP_JOB: &str = "rw = \"randrw\"\nrwmixread = 50\nbs = \"16KiB\"\niodepth = 4\nsize = \"2MiB\"\nio_count = 300\nplacement_ids = [0, 1]";

/// On a zoned drive the job writes at the zones' write pointers (docs/zns.md).
const ZONED_JOB: &str = "rw = \"randrw\"\nrwmixread = 50\nbs = \"16KiB\"\niodepth = 1\nio_count = 300\nzonemode = \"zbd\"";

fn opts() -> RunOptions {
    common::opts(7)
}

/// A driver the test starts itself on a device it holds.
trait Started: ssdlab::Driver {
    fn begin(&mut self, dev: &mut Device);
}

impl Started for JobDriver {
    fn begin(&mut self, dev: &mut Device) {
        self.start(dev);
    }
}

impl Started for ReplayDriver {
    fn begin(&mut self, dev: &mut Device) {
        self.start(dev);
    }
}

/// Hold the device: precondition, switch the oracle on, drive, build the result.
fn run_held<D: Started>(
    cfg: &SsdConfig,
    dev: &mut Device,
    driver: &mut D,
    job: serde_json::Value,
) -> Result<Ran, String> {
    let e = |e: ssdlab::error::Error| e.to_string();
    let pre = ssdlab::run::precondition(dev, cfg, 7).map_err(e)?;
    dev.enable_check();
    driver.begin(dev);
    dev.run(driver, 1 << 22, &mut |_, _| true).map_err(e)?;
    let dc = dev.check().unwrap();
    if let Some(err) = &dc.first_error {
        return Err(format!("data oracle: {err}"));
    }
    let r = ssdlab::run::build_result(dev, cfg, job, 7, "done", 0.0, pre);
    Ok(Ran {
        result: common::without_wall(&r),
        // The oracle follows the mapped back ends' data and a zoned drive's; a raw device's
        // reads address the media and PCM is updated in place: neither reports to it.
        checked_reads: (!matches!(
            dev.backend().kind(),
            ssdlab::config::BackendKind::Raw | ssdlab::config::BackendKind::Pcm
        ))
        .then_some(dc.reads),
    })
}

/// Run the combination's driver once. Err: the run refused it (a message) or failed.
fn run(c: &Combo, cfg: &SsdConfig) -> Result<Ran, String> {
    let e = |e: ssdlab::error::Error| e.to_string();
    match value(c, 6) {
        "job" => {
            let text = match value(c, 0) {
                "zoned" => ZONED_JOB,
                "fdp" => FDP_JOB,
                _ => JOB,
            };
            let spec = JobSpec::from_toml_str(text, "matrix job").unwrap();
            let job = spec.fit(cfg.logical_bytes()).map_err(e)?;
            let mut dev = Device::new(cfg, 7).map_err(e)?;
            let mut drv = JobDriver::new(job, &dev, 7).map_err(e)?;
            let json = serde_json::to_value(&spec).unwrap();
            let ran = run_held(cfg, &mut dev, &mut drv, json)?;
            drv.finish().map_err(e)?;
            Ok(ran)
        }
        "replay" => {
            let tjob = TraceJob::from_json(
                r#"{"trace": "model:financial1,count=300", "mode": "afap", "iodepth": 4}"#,
            )
            .unwrap();
            let replay = Replay::new(&tjob, cfg.logical_bytes(), 7).map_err(e)?;
            let mut dev = Device::new(cfg, 7).map_err(e)?;
            let mut drv = ReplayDriver::new(replay, &tjob);
            let json = serde_json::to_value(&tjob).unwrap();
            let ran = run_held(cfg, &mut dev, &mut drv, json)?;
            drv.finish().map_err(e)?;
            Ok(ran)
        }
        "nvme-regs" => nvme_regs(cfg),
        "serve" => serve_session(cfg),
        "paging" => paging(cfg),
        d => unreachable!("{d}"),
    }
}

fn nvme_regs(cfg: &SsdConfig) -> Result<Ran, String> {
    use ssdlab::config::InterruptMode;
    use ssdlab::driver::nvme_regs::controller::{Controller, NvmeOptions};
    use ssdlab::driver::nvme_regs::host_driver::HostDriver;
    let e = |e: ssdlab::error::Error| e.to_string();
    let ctrl = Controller::new(cfg, &NvmeOptions::default()).map_err(e)?;
    let mut drv = HostDriver::bring_up(ctrl, 32, InterruptMode::Msix).map_err(e)?;
    // Bytes are the oracle here: 64 blocks written with a pattern each, some twice, one range
    // deallocated and a flush between, then every block read back. A zoned drive takes writes
    // only at its zones' write pointers: there the blocks are written once, in order.
    let zoned = cfg.zns.is_some();
    let blocks = 64u64.min(drv.nsze());
    let lba = drv.lba_size() as usize;
    let pattern = |b: u64, gen: u8| vec![(b as u8).wrapping_mul(31) ^ gen; lba];
    let mut want: Vec<Vec<u8>> = Vec::new();
    for b in 0..blocks {
        drv.write(b, &pattern(b, 1)).map_err(e)?;
        want.push(pattern(b, 1));
    }
    if !zoned {
        for b in (0..blocks).step_by(3) {
            drv.write(b, &pattern(b, 2)).map_err(e)?;
            want[b as usize] = pattern(b, 2);
        }
    }
    drv.flush().map_err(e)?;
    if !zoned {
        drv.deallocate(8, 4).map_err(e)?;
        for w in &mut want[8..12] {
            *w = vec![0; lba];
        }
    }
    for b in 0..blocks {
        let got = drv.read(b, 1).map_err(e)?;
        if got != want[b as usize] {
            return Err(format!("data oracle: block {b} read back other bytes"));
        }
    }
    let r = ssdlab::run::build_result(
        drv.ctrl.device(),
        cfg,
        serde_json::Value::Null,
        7,
        "done",
        0.0,
        drv.ctrl.precondition_seconds(),
    );
    Ok(Ran {
        result: common::without_wall(&r),
        checked_reads: Some(blocks),
    })
}

fn serve_session(cfg: &SsdConfig) -> Result<Ran, String> {
    let dir = std::env::temp_dir().join(format!("ssdlab-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.log", cfg.hash()));
    let mut log = format!("{}\n# clock logical\n", ssdlab::serve::session::MAGIC_LINE);
    let page = 16384u64;
    for i in 0..120u64 {
        log.push_str(&format!("at {}\n", i * 50_000_000));
        let off = (i * 7 % 64) * page;
        let op = match i % 5 {
            0 | 2 => "write",
            4 => "flush",
            _ => "read",
        };
        let len = if op == "flush" { 0 } else { page };
        log.push_str(&format!("{op} {off} {len} 0\n"));
    }
    std::fs::write(&path, log).unwrap();
    let out =
        ssdlab::serve::session::replay(cfg, path.to_str().unwrap(), &opts(), &mut |_, _| true);
    std::fs::remove_file(&path).ok();
    let (out, _) = out.map_err(|e| e.to_string())?;
    Ok(Ran {
        result: common::without_wall(&out.result),
        checked_reads: None,
    })
}

fn paging(cfg: &SsdConfig) -> Result<Ran, String> {
    use ssdlab::paging::{PagingConfig, Workload};
    let mut v: Vec<(u32, bool)> = (0..600).map(|p| (p, true)).collect();
    v.extend((0..600).map(|p| (p, false)));
    let w = Workload::from_pages(v);
    let pc = PagingConfig::new(1 << 20, 8 << 20);
    let out = ssdlab::paging::run(cfg, "matrix", &pc, &w, 7).map_err(|e| e.to_string())?;
    let r = &out.result;
    if r.oracle_mismatches != 0 {
        return Err(format!("paging oracle: {} mismatches", r.oracle_mismatches));
    }
    let mut v: serde_json::Value = serde_json::to_value(&out.result).unwrap();
    // The only figures of wall time in a paging result.
    for k in ["wall_seconds", "accesses_per_wall_second"] {
        v.as_object_mut().unwrap().remove(k);
    }
    Ok(Ran {
        result: v,
        checked_reads: Some(r.faults.major),
    })
}

type Documented = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
);

/// Which documented pair explains a refusal of `c` with message `msg`, if any.
fn explained(c: &Combo, msg: &str) -> Option<&'static Documented> {
    REFUSED
        .iter()
        .chain(DRIVER_REFUSED)
        .find(|(a, b, words, _)| {
            holds(c, a) && holds(c, b) && words.iter().all(|w| msg.contains(w))
        })
}

/// Figures each configured part adds to a result, by JSON path.
fn figures_missing(c: &Combo, v: &serde_json::Value) -> Vec<&'static str> {
    let mut want: Vec<&'static str> = Vec::new();
    if value(c, 6) == "paging" {
        // A paging result is the swap's: the device's figures are its latencies, and the
        // steady state its preconditioning reached.
        if value(c, 5) == "steady-state" {
            want.push("steady_state");
        }
        let text = v.to_string();
        return want
            .into_iter()
            .filter(|k| !text.contains(&format!("\"{k}\"")))
            .collect();
    }
    if value(c, 1) != "none" {
        want.push("cache");
    }
    if matches!(value(c, 0), "block" | "bast" | "fast") {
        want.push("merges");
    }
    if value(c, 3) == "on" {
        want.push("percentage_used");
    }
    if value(c, 2) != "full" {
        want.push("translation_reads");
    }
    if value(c, 5) == "steady-state" {
        want.push("steady_state");
    }
    match value(c, 0) {
        "zoned" => want.push("zones"),
        "pcm" => want.push("pcm"),
        "fdp" => want.push("fdp"),
        _ => {}
    }
    let text = v.to_string();
    want.into_iter()
        .filter(|k| !text.contains(&format!("\"{k}\"")))
        .collect()
}

/// Run a legal combination twice and check it; returns its row of the matrix.
fn check_legal(c: &Combo, failures: &mut Vec<String>) -> serde_json::Value {
    let (preset, ov) = config(c);
    let cfg = SsdConfig::resolve(preset, &ov).unwrap();
    let first = match run(c, &cfg) {
        Ok(r) => r,
        Err(msg) => {
            failures.push(format!("{}: legal, but: {msg}", name(c)));
            return serde_json::json!({"combination": name(c), "outcome": "failed"});
        }
    };
    let again = run(c, &cfg).expect("ran once, runs again");
    if first.result != again.result {
        failures.push(format!("{}: two runs differ", name(c)));
    }
    let missing = figures_missing(c, &first.result);
    if !missing.is_empty() {
        failures.push(format!("{}: no {missing:?} in the result", name(c)));
    }
    if first.checked_reads == Some(0) {
        failures.push(format!("{}: no read was checked", name(c)));
    }
    serde_json::json!({"combination": name(c), "outcome": "ran",
        "checked_reads": first.checked_reads})
}

/// Try an illegal combination: it must be refused (by the validator, or by its driver when
/// it starts) in one line a documented pair explains; returns its row and that pair.
fn check_refused(c: &Combo, failures: &mut Vec<String>) -> Option<&'static Documented> {
    let (preset, ov) = config(c);
    let msg = match SsdConfig::resolve(preset, &ov) {
        Err(e) => e.to_string(),
        Ok(cfg) => match run(c, &cfg) {
            Err(m) => m,
            Ok(_) => {
                failures.push(format!("{}: documented as refused, but ran", name(c)));
                return None;
            }
        },
    };
    if msg.contains('\n') {
        failures.push(format!(
            "{}: a refusal of more than one line: {msg}",
            name(c)
        ));
    }
    let doc = explained(c, &msg);
    if doc.is_none() {
        failures.push(format!(
            "{}: refused, not as a documented pair: {msg}",
            name(c)
        ));
    }
    doc
}

#[test]
fn every_pair_of_parts_runs_checked_and_repeats_or_is_refused_naming_both() {
    let pairs = all_pairs();
    let (legal_pairs, illegal_pairs): (Vec<_>, Vec<_>) = pairs
        .iter()
        .partition(|&&(a, va, b, vb)| legal(&with_defaults(&[(a, va), (b, vb)])));
    let combos = pairwise(&legal_pairs);
    for &(a, va, b, vb) in &legal_pairs {
        assert!(
            combos.iter().any(|c| c[a] == va && c[b] == vb),
            "legal pair {}={} {}={} in no combination",
            AXES[a].0,
            AXES[a].1[va],
            AXES[b].0,
            AXES[b].1[vb]
        );
    }
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    for c in &combos {
        rows.push(check_legal(c, &mut failures));
    }
    let mut met: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut refused = Vec::new();
    for &(a, va, b, vb) in &illegal_pairs {
        let c = with_defaults(&[(a, va), (b, vb)]);
        if let Some((da, db, _, why)) = check_refused(&c, &mut failures) {
            met.insert((da, db));
            refused.push(
                serde_json::json!({"pair": format!("{}={} with {}={}", AXES[a].0,
                AXES[a].1[va], AXES[b].0, AXES[b].1[vb]), "documented": format!("{da} with {db}"),
                "why": why}),
            );
        }
    }
    for (a, b, _, _) in REFUSED.iter().chain(DRIVER_REFUSED) {
        if !met.contains(&(*a, *b)) {
            failures.push(format!("documented refusal {a} with {b} was not met: the model takes it now, remove it from the list"));
        }
    }
    {
        let doc = |l: &[Documented]| {
            l.iter()
                .map(|(a, b, _, why)| serde_json::json!({"a": a, "b": b, "why": why}))
                .collect::<Vec<_>>()
        };
        let v = serde_json::json!({
            "axes": AXES.iter().map(|(n, v)| serde_json::json!({"axis": n, "values": v})).collect::<Vec<_>>(),
            "legal_pairs": legal_pairs.len(),
            "illegal_pairs": illegal_pairs.len(),
            "refused": doc(REFUSED),
            "driver_refused": doc(DRIVER_REFUSED),
            "combinations": rows,
            "refusals": refused,
        });
        let text = serde_json::to_string_pretty(&v).unwrap() + "\n";
        match std::env::var("SSDLAB_MATRIX_OUT") {
            Ok(path) => std::fs::write(path, text).unwrap(),
            Err(_) => {
                // docs/combinations.md renders the checked-in artefact: it must be this run's.
                let artefact = concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../docs/generated/combination-matrix.json"
                );
                let kept: Option<serde_json::Value> = std::fs::read_to_string(artefact)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok());
                if kept.as_ref() != Some(&v) {
                    failures.push(
                        "docs/generated/combination-matrix.json is stale: python scripts/fidelity.py --blocks combination-matrix".into(),
                    );
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
