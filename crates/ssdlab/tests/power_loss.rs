//! Power loss on the page-mapped FTL (issue 43, docs/power-loss.md): an oracle of what a read
//! after recovery may return, checked at thousands of random cut points.
//!
//! The oracle keeps, per logical unit, every write the host submitted (version k is the k-th;
//! a unit never has two writes in flight, so the drive accepts them in that order), when its
//! completion reached the host, whether it carried FUA, and every FLUSH with its submission and
//! completion. A write must survive when its completion reached the host and the drive has no
//! volatile cache, or has power-loss protection, or the write carried FUA, or a FLUSH submitted
//! after that completion has completed. After recovery a unit must read one of its versions from
//! the newest write that must survive on (0, what it held before, when none must), and never
//! anything else (no older version, no unmapped unit that held data). The model's count of
//! acknowledged writes lost must be the oracle's exactly.
//!
//! `Device::power_cut` leaves the device as it is, so one run is cut at many points.

use ssdlab::device::{Completion, Device, Driver, Flags, Request};
use ssdlab::driver::power_cut::Acknowledging;
use ssdlab::request::Op;
use ssdlab::sim::{Rng, SimTime};
use ssdlab::SsdConfig;
use std::collections::{HashMap, HashSet};

/// One update of a unit: a write, or a trim (a deallocation of the whole unit).
#[derive(Clone, Copy, Debug)]
struct Write {
    completed: Option<SimTime>,
    fua: bool,
    trim: bool,
}

enum Pending {
    Write(u64),
    Flush(usize),
    Read,
}

/// A closed-loop driver at `depth` of one-unit writes (some FUA), reads and FLUSHes over
/// `units` logical units, recording what the oracle needs.
struct Oracle {
    rng: Rng,
    unit: u64,
    units: u64,
    depth: u32,
    left: u64,
    fua_percent: u64,
    flush_percent: u64,
    /// Of the updates, the share that are trims.
    trim_percent: u64,
    writes: HashMap<u64, Vec<Write>>,
    busy: HashSet<u64>,
    flushes: Vec<(SimTime, Option<SimTime>)>,
    pending: HashMap<u32, Pending>,
}

impl Oracle {
    fn submit_one(&mut self, dev: &mut Device, now: SimTime) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let roll = self.rng.below(100);
        let (op, lpn) = if roll < self.flush_percent {
            (Op::Flush, 0)
        } else {
            let mut lpn = self.rng.below(self.units);
            while self.busy.contains(&lpn) {
                lpn = (lpn + 1) % self.units;
            }
            let op = if roll < self.flush_percent + 15 {
                Op::Read
            } else if self.rng.below(100) < self.trim_percent {
                Op::Trim
            } else {
                Op::Write
            };
            (op, lpn)
        };
        let fua = op == Op::Write && self.rng.below(100) < self.fua_percent;
        let (offset, len) = match op {
            Op::Flush => (0, 0),
            _ => (lpn * self.unit, self.unit),
        };
        let r = Request {
            op,
            offset,
            len,
            queue: 0,
            flags: if fua { Flags::FUA } else { Flags::NONE },
            arrival: now,
        };
        let id = dev.submit(now, r).unwrap();
        let p = match op {
            Op::Write | Op::Trim => {
                self.busy.insert(lpn);
                let w = self.writes.entry(lpn).or_default();
                w.push(Write {
                    completed: None,
                    fua,
                    trim: op == Op::Trim,
                });
                Pending::Write(lpn)
            }
            Op::Flush => {
                self.flushes.push((now, None));
                Pending::Flush(self.flushes.len() - 1)
            }
            _ => Pending::Read,
        };
        self.pending.insert(id, p);
    }
}

impl Driver for Oracle {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        match self.pending.remove(&done.id).expect("a request of ours") {
            Pending::Write(lpn) => {
                self.busy.remove(&lpn);
                let w = self.writes.get_mut(&lpn).unwrap().last_mut().unwrap();
                assert!(w.completed.is_none());
                w.completed = Some(now);
            }
            Pending::Flush(i) => self.flushes[i].1 = Some(now),
            Pending::Read => {}
        }
        self.submit_one(dev, now);
    }
}

/// Units the cuts of this process recovered at a trim GC's erase made durable (nextest runs
/// each test in a process of its own).
static TRIMS_DURABLE_BY_ERASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Live checkpoint map pages GC moved over the runs of this process.
static CHECKPOINT_PAGES_MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What one cut is checked for; returns the acknowledged writes the oracle says were lost.
fn check_cut(o: &Oracle, dev: &Device, volatile: bool, plp: bool) -> u64 {
    let out = dev.power_cut().expect("the model is armed");
    // A FLUSH that completed guarantees the writes completed before it was submitted: the
    // latest such submission time.
    let flushed_before = o
        .flushes
        .iter()
        .filter(|f| f.1.is_some())
        .map(|f| f.0)
        .max();
    let mut acked_lost = 0;
    for (&lpn, ws) in &o.writes {
        // A trim is durable only once a map checkpoint holds it (NVMe lets a deallocated
        // block read its old data until then): none must survive.
        let must = |w: &Write| match w.completed {
            None => false,
            Some(_) if w.trim => false,
            Some(c) => !volatile || plp || w.fua || flushed_before.is_some_and(|f| f >= c),
        };
        let floor = ws.iter().rposition(must).map_or(0, |i| i as u32 + 1);
        let got = out.recovered.get(&lpn).copied().unwrap_or(Some(0));
        let Some(v) = got else {
            panic!(
                "cut at event {}: unit {lpn} reads unmapped after recovery (a third value); \
                 writes {ws:?}",
                out.result.event
            );
        };
        assert!(
            v >= floor && v as usize <= ws.len(),
            "cut at event {}: unit {lpn} reads version {v}, expected {floor}..={} \
             (writes {ws:?}, flushes done before {flushed_before:?})",
            out.result.event,
            ws.len()
        );
        acked_lost += ws[v as usize..]
            .iter()
            .filter(|w| w.completed.is_some() && !w.trim)
            .count() as u64;
    }
    assert_eq!(
        out.result.acknowledged_writes_lost, acked_lost,
        "cut at event {}: the model's count of acknowledged writes lost",
        out.result.event
    );
    assert_eq!(out.result.units_unreadable, 0);
    TRIMS_DURABLE_BY_ERASE.fetch_add(
        out.result.trims_durable_by_erase,
        std::sync::atomic::Ordering::Relaxed,
    );
    if plp || !volatile {
        assert_eq!(out.result.cache_units_lost, 0);
    }
    if plp {
        assert_eq!(out.result.programs_lost, 0);
    }
    acked_lost
}

struct Setup {
    overrides: Vec<String>,
    volatile: bool,
    plp: bool,
    precondition: bool,
    trim_percent: u64,
}

/// A small drive (2 channels × 1 die × 2 planes × 80 blocks of 16 pages of 16 KiB, 4 KiB map
/// units) written over a small range many times, so that GC runs throughout.
fn setup(cache: &str, plp: bool, cached_map: bool, precondition: bool) -> Setup {
    let mut ov: Vec<String> = [
        "nand.channels=2",
        "nand.dies_per_package=1",
        "nand.blocks_per_plane=80",
        "nand.pages_per_block=16",
        "precondition.random_overwrite=0.0",
        "ftl.checkpoint_units=97",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if plp {
        ov.push("ftl.power_loss_protection=true".into());
    }
    if cached_map {
        ov.push("ftl.mapping=\"cached\"".into());
        ov.push("ftl.mapping_cache=\"16KiB\"".into());
    }
    let volatile = cache == "write-back";
    if cache != "none" {
        ov.push("cache.capacity=\"256KiB\"".into());
        ov.push(format!("cache.mode=\"{cache}\""));
    }
    Setup {
        overrides: ov,
        volatile,
        plp,
        precondition,
        trim_percent: 0,
    }
}

/// One run of `requests` requests, cut (without stopping it) after random slices of events:
/// returns the cuts checked and the acknowledged writes lost over them.
fn cuts(s: &Setup, seed: u64, requests: u64, cuts_wanted: u64) -> (u64, u64) {
    let cfg = SsdConfig::resolve("small-tlc", &s.overrides).unwrap();
    let mut dev = Device::new(&cfg, seed).unwrap();
    let unit = cfg.map_unit_bytes();
    if s.precondition {
        ssdlab::run::precondition(&mut dev, &cfg, seed).unwrap();
    }
    dev.enable_power_loss("test").unwrap();
    let units = (cfg.logical_units() / 8).max(64);
    let mut o = Oracle {
        rng: Rng::stream(seed, "power-loss-test"),
        unit,
        units,
        depth: 8,
        left: requests,
        fua_percent: 10,
        flush_percent: if s.volatile { 3 } else { 0 },
        trim_percent: s.trim_percent,
        writes: HashMap::new(),
        busy: HashSet::new(),
        flushes: Vec::new(),
        pending: HashMap::new(),
    };
    let now = dev.now();
    for _ in 0..o.depth {
        o.submit_one(&mut dev, now);
    }
    // An estimate of the run's events, to spread the cuts over it.
    let spread = (requests * 12 / cuts_wanted).max(2);
    let mut rng = Rng::stream(seed, "cut-points");
    let (mut checked, mut lost) = (0, 0);
    loop {
        let slice = 1 + rng.below(spread);
        let idle = {
            let mut d = Acknowledging { inner: &mut o };
            dev.run(&mut d, slice, &mut |_, _| false).unwrap()
        };
        lost += check_cut(&o, &dev, s.volatile, s.plp);
        checked += 1;
        if idle {
            break;
        }
    }
    assert!(o.pending.is_empty());
    // The checkpoints' map pages are in the map with the host's data: GC moved the live ones
    // and let the superseded ones go, the map and the blocks agreeing.
    dev.backend().page_ftl().unwrap().check().unwrap();
    let p = dev.power_cut().unwrap().result;
    assert!(p.checkpoints_on_flash <= p.checkpoints && p.checkpoints > 0);
    assert_eq!(
        p.checkpoint_pages_written,
        dev.backend()
            .page_ftl()
            .unwrap()
            .stats
            .checkpoint_units_written
    );
    CHECKPOINT_PAGES_MOVED.fetch_add(
        p.checkpoint_pages_moved,
        std::sync::atomic::Ordering::Relaxed,
    );
    let f = &dev.backend().page_ftl().unwrap().stats;
    eprintln!(
        "seed {seed}: {checked} cuts over {} events, {} GC runs, {} erases, {} checkpoints \
         ({} map pages, {} moved by GC)",
        dev.events(),
        f.gc_runs,
        f.erases,
        p.checkpoints,
        p.checkpoint_pages_written,
        p.checkpoint_pages_moved
    );
    (checked, lost)
}

fn many(cache: &str, plp: bool, cached_map: bool, precondition: bool) -> (u64, u64) {
    many_of(setup(cache, plp, cached_map, precondition))
}

fn many_of(s: Setup) -> (u64, u64) {
    let (cache, plp) = (if s.volatile { "write-back" } else { "other" }, s.plp);
    let mut total = (0, 0);
    for seed in 1..=4 {
        let (c, l) = cuts(&s, seed, 8000, 400);
        total.0 += c;
        total.1 += l;
    }
    eprintln!(
        "{cache} plp={plp} trims={}%: {total:?} (cuts, acknowledged writes lost)",
        s.trim_percent
    );
    assert!(total.0 >= 1000, "only {} cuts", total.0);
    total
}

#[test]
fn no_cache_loses_no_acknowledged_write_at_a_thousand_cuts() {
    let (_, lost) = many("none", false, false, true);
    // Without a volatile cache a write completes once programmed: nothing acknowledged is lost.
    assert_eq!(lost, 0);
}

/// Checkpoints far apart: their map pages live long enough for GC to meet them in its victims
/// and move them (at a checkpoint every 97 units each page is superseded first). The oracle
/// holds with map pages on flash beside the data, and GC moved some.
#[test]
fn gc_moves_live_checkpoint_pages_and_loses_no_acknowledged_write() {
    let mut s = setup("none", false, false, true);
    for o in &mut s.overrides {
        if o.starts_with("ftl.checkpoint_units=") {
            *o = "ftl.checkpoint_units=3000".into();
        }
    }
    let (_, lost) = many_of(s);
    assert_eq!(lost, 0);
    assert!(CHECKPOINT_PAGES_MOVED.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

#[test]
fn no_cache_on_an_empty_drive() {
    let (_, lost) = many("none", false, false, false);
    assert_eq!(lost, 0);
}

#[test]
fn a_write_back_cache_without_protection_loses_only_what_no_flush_or_fua_covered() {
    let (_, lost) = many("write-back", false, false, true);
    // Writes acknowledged from DRAM and not yet flushed do go: the oracle allowed them, and
    // counted them as the model did.
    assert!(
        lost > 0,
        "no acknowledged write was lost: the cache is not volatile?"
    );
}

#[test]
fn a_write_back_cache_with_protection_loses_no_acknowledged_write() {
    let (_, lost) = many("write-back", true, false, true);
    assert_eq!(lost, 0);
}

#[test]
fn a_write_through_cache_loses_no_acknowledged_write() {
    let (_, lost) = many("write-through", false, false, true);
    assert_eq!(lost, 0);
}

#[test]
fn the_cached_map_with_a_write_back_cache() {
    many("write-back", false, true, true);
}

#[test]
fn the_cached_map_without_a_cache_loses_no_acknowledged_write() {
    let (_, lost) = many("none", false, true, true);
    assert_eq!(lost, 0);
}

/// Trims no checkpoint holds yet, whose data GC then erased: a cut must not leave such a unit
/// unreadable (found with serve and the guest: mkfs's trims, then a cut, reported 164
/// unreadable units), nor bring back data older than what the trim let go. The erase makes the
/// trim durable, and the unit reads the deallocated value. With a write-back cache, a FLUSH
/// after a trim makes it durable.
#[test]
fn trims_whose_data_gc_erased_read_as_trimmed_after_a_cut() {
    for (cache, cached_map) in [("none", false), ("write-back", false), ("none", true)] {
        let mut s = setup(cache, false, cached_map, true);
        s.trim_percent = 30;
        many_of(s);
    }
    // The case the test is about did arise.
    assert!(TRIMS_DURABLE_BY_ERASE.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

mod run_options {
    //! The cut as a run option: the result's `power_loss` block, determinism, and bad input.

    use ssdlab::sim::SimTime;
    use ssdlab::{JobSpec, RunOptions, SsdConfig};

    fn small(extra: &[&str]) -> SsdConfig {
        let mut ov: Vec<String> = [
            "nand.channels=2",
            "nand.dies_per_package=1",
            "nand.blocks_per_plane=80",
            "nand.pages_per_block=16",
            "precondition.random_overwrite=0.0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ov.extend(extra.iter().map(|s| s.to_string()));
        SsdConfig::resolve("small-tlc", &ov).unwrap()
    }

    fn job() -> JobSpec {
        JobSpec::from_toml_str(
            "rw = \"randwrite\"\nbs = \"4KiB\"\niodepth = 8\nio_count = 3000",
            "job",
        )
        .unwrap()
    }

    fn opts(event: Option<u64>, at: Option<SimTime>) -> RunOptions {
        RunOptions {
            seed: 3,
            record_requests: false,
            stats_interval: None,
            power_cut_event: event,
            power_cut_at: at,
        }
    }

    fn refused(cfg: &SsdConfig, o: &RunOptions) -> String {
        match ssdlab::run(cfg, &job(), o, &mut |_, _| true) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_cut_run_reports_its_recovery_and_repeats_exactly() {
        let cfg = small(&["cache.capacity=\"256KiB\"", "cache.mode=\"write-back\""]);
        let o = opts(Some(5000), None);
        let r = ssdlab::run(&cfg, &job(), &o, &mut |_, _| true)
            .unwrap()
            .result;
        let p = r.power_loss.clone().expect("a power_loss block");
        assert_eq!(p.event, 5000);
        assert_eq!(r.sim.stop_reason, "power_cut");
        assert!(p.recovery_us > 0.0 && p.checkpoint_pages_read > 0);
        assert!(
            p.pages_scanned > 0,
            "blocks were written since the checkpoint"
        );
        // Writes acknowledged from the volatile cache and never flushed are lost.
        assert!(p.acknowledged_writes_lost > 0 && p.cache_units_lost > 0);
        assert!(p.units_lost > 0 && !p.lost_units.is_empty());
        assert_eq!(p.units_unreadable, 0);
        let again = ssdlab::run(&cfg, &job(), &o, &mut |_, _| true)
            .unwrap()
            .result;
        assert_eq!(again.power_loss, r.power_loss);
        assert_eq!(
            serde_json::to_value(&again.ops).unwrap(),
            serde_json::to_value(&r.ops).unwrap()
        );
        // With protection nothing acknowledged goes.
        let plp = small(&[
            "cache.capacity=\"256KiB\"",
            "cache.mode=\"write-back\"",
            "ftl.power_loss_protection=true",
        ]);
        let r = ssdlab::run(&plp, &job(), &o, &mut |_, _| true)
            .unwrap()
            .result;
        let p = r.power_loss.unwrap();
        assert_eq!(p.acknowledged_writes_lost, 0);
        assert!(p.cache_units_flushed_on_plp > 0);
    }

    /// A checkpoint writes the map pages changed since the one before: a shorter interval
    /// writes more checkpoints, and more pages in all (random writes change entries all over
    /// the map, so each checkpoint's pages shrink less than its interval does), which the
    /// drive programs: its write amplification grows by their share.
    #[test]
    fn a_shorter_checkpoint_interval_writes_more_map_pages_and_costs_more_waf() {
        let run = |units: u64| {
            let cfg = small(&[&format!("ftl.checkpoint_units={units}")]);
            ssdlab::run(&cfg, &job(), &opts(Some(5000), None), &mut |_, _| true)
                .unwrap()
                .result
        };
        let pages = |r: &ssdlab::stats::result::RunResult| {
            let p = r.power_loss.clone().unwrap();
            (p.checkpoints, p.checkpoint_pages_written)
        };
        let (short_run, long_run) = (run(16), run(512));
        let (short, long) = (pages(&short_run), pages(&long_run));
        assert!(short.0 > long.0 && long.0 > 0, "{short:?} {long:?}");
        assert!(short.1 > long.1, "{short:?} {long:?}");
        // A checkpoint writes at least one page and at most the map's pages.
        assert!(short.1 >= short.0 && long.1 >= long.0, "{short:?} {long:?}");
        let waf = |r: &ssdlab::stats::result::RunResult| {
            let p = r.power_loss.as_ref().unwrap();
            (
                r.device.write_amplification,
                p.checkpoint_write_amplification,
            )
        };
        let (s, l) = (waf(&short_run), waf(&long_run));
        assert!(s.0 > l.0 && s.1 > l.1 && l.1 > 0.0, "{s:?} {l:?}");
        // What is left is the host's and GC's part: at least 1.
        assert!(s.0 - s.1 >= 1.0 && l.0 - l.1 >= 1.0, "{s:?} {l:?}");
    }

    #[test]
    fn a_cut_at_a_time_stops_there() {
        let cfg = small(&[]);
        let r = ssdlab::run(
            &cfg,
            &job(),
            &opts(None, Some(SimTime::from_us(2000))),
            &mut |_, _| true,
        )
        .unwrap()
        .result;
        let p = r.power_loss.unwrap();
        assert!(p.at_us <= 2000.0 && p.at_us > 1000.0, "{}", p.at_us);
        // No volatile cache: a completed write was programmed first.
        assert_eq!(p.acknowledged_writes_lost, 0);
    }

    #[test]
    fn bad_cuts_are_refused_with_the_option_named() {
        let cfg = small(&[]);
        let e = refused(&cfg, &opts(Some(100_000_000), None));
        assert!(
            e.contains("power_cut_event") && e.contains("100000000"),
            "{e}"
        );
        let e = refused(&cfg, &opts(None, Some(SimTime::from_us(10_000_000))));
        assert!(e.contains("power_cut_at"), "{e}");
        let e = refused(&cfg, &opts(Some(0), None));
        assert!(e.contains("power_cut_event") && e.contains("got 0"), "{e}");
        let e = refused(&cfg, &opts(Some(5), Some(SimTime::from_us(1))));
        assert!(e.contains("got both"), "{e}");
        let block = small(&["ftl.kind=\"block\"", "ftl.map_unit=\"16KiB\""]);
        let e = refused(&block, &opts(Some(100), None));
        assert!(
            e.contains("power_cut_event") && e.contains("page-mapped"),
            "{e}"
        );
    }
}

mod checkpoint_programs {
    //! The map checkpoints' programs on the media: die time, pages of the drive, write
    //! amplification, and the host writes that wait behind them.

    use ssdlab::device::{Completion, Device, Driver, Flags, Request};
    use ssdlab::media::nand::NandTimingPs;
    use ssdlab::request::Op;
    use ssdlab::sim::SimTime;
    use ssdlab::SsdConfig;

    /// Sequential one-unit writes at queue depth 1.
    struct Sequential {
        next: u64,
        left: u64,
        unit: u64,
    }

    impl Sequential {
        fn submit(&mut self, dev: &mut Device, now: SimTime) {
            if self.left == 0 {
                return;
            }
            self.left -= 1;
            let r = Request {
                op: Op::Write,
                offset: self.next * self.unit,
                len: self.unit,
                queue: 0,
                flags: Flags::NONE,
                arrival: now,
            };
            self.next += 1;
            dev.submit(now, r).unwrap();
        }
    }

    impl Driver for Sequential {
        fn on_complete(&mut self, dev: &mut Device, now: SimTime, _: Completion) {
            self.submit(dev, now);
        }
    }

    /// A drive of one die with one plane of SLC, whose map unit is its 16 KiB page: every
    /// program is one page on that die, of one page type, none gathered with another.
    fn tiny() -> SsdConfig {
        let ov: Vec<String> = [
            "nand.cell=\"slc\"",
            "nand.channels=1",
            "nand.dies_per_package=1",
            "nand.planes_per_die=1",
            "nand.blocks_per_plane=64",
            "nand.pages_per_block=16",
            "nand.timing.read=[\"50us\"]",
            "nand.timing.program=[\"500us\"]",
            "ftl.map_unit=\"16KiB\"",
            "precondition.fill=\"none\"",
            "precondition.random_overwrite=0.0",
            "ftl.checkpoint_units=8",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        SsdConfig::resolve("small-tlc", &ov).unwrap()
    }

    /// 64 sequential writes, with or without the power-loss model: (device, end time).
    fn run(armed: bool) -> (Device, SimTime) {
        let cfg = tiny();
        let mut dev = Device::new(&cfg, 1).unwrap();
        if armed {
            dev.enable_power_loss("test").unwrap();
        }
        let mut d = Sequential {
            next: 0,
            left: 64,
            unit: cfg.map_unit_bytes(),
        };
        d.submit(&mut dev, SimTime::ZERO);
        assert!(dev.run(&mut d, u64::MAX, &mut |_, _| true).unwrap());
        let end = dev.now();
        (dev, end)
    }

    /// Worked by hand: 64 units written one at a time, a checkpoint every 8. The map's 4,096
    /// entries per 16 KiB map page put units 0–63 in map page 0, so each of the 8 checkpoints
    /// programs that one page: 8 programs more on the die, each as long as a host unit's
    /// (command, 16 KiB over the bus, tPROG 500 µs), and each queued ahead of the host write
    /// that took the checkpoint, whose completion (at queue depth 1, the run's end) waits that
    /// long: the die's busy time and the run both grow by 8 programs.
    #[test]
    fn eight_checkpoints_program_eight_map_pages_on_the_die() {
        let (plain, plain_end) = run(false);
        let (armed, armed_end) = run(true);
        let cfg = tiny();
        let t = NandTimingPs::from_config(&cfg);
        let program = t.cmd_addr + t.bus_time(16384) + t.program[0];
        let busy = |d: &Device| {
            d.backend()
                .nand()
                .unwrap()
                .fil
                .die_busy()
                .fold(SimTime::ZERO, |a, b| a + b)
        };
        assert_eq!(busy(&plain), SimTime(64 * program.0));
        assert_eq!(busy(&armed), SimTime(72 * program.0));
        assert_eq!(armed_end, plain_end + SimTime(8 * program.0));
        let f = &armed.backend().page_ftl().unwrap().stats;
        assert_eq!((f.host_units_written, f.checkpoint_units_written), (64, 8));
        assert_eq!(
            plain
                .backend()
                .page_ftl()
                .unwrap()
                .stats
                .checkpoint_units_written,
            0
        );
        let programmed = |d: &Device| {
            let nand = d.backend().nand().unwrap();
            nand.fil.counters.nand_pages_written
        };
        assert_eq!(programmed(&armed), 72);
        assert_eq!(programmed(&plain), 64);
        let p = armed.power_cut().unwrap().result;
        assert_eq!((p.checkpoints, p.checkpoints_on_flash), (8, 8));
        assert_eq!(p.checkpoint_pages_written, 8);
        assert_eq!(p.checkpoint_write_amplification, 8.0 / 64.0);
        // Recovery reads the one map page where the last checkpoint put it.
        assert_eq!(p.checkpoint_pages_read, 1);
        let read = t.cmd_addr + t.read[0];
        assert_eq!(
            p.checkpoint_read_us,
            read.max(t.bus_time(16384)).as_us_f64()
        );
    }
}
