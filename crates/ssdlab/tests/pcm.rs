//! The PCM-only device through whole runs: Table 7 latencies seen by the host, determinism,
//! wear and Start-Gap in the result, a comparison with a NAND drive, and bad configs.

mod common;

use ssdlab::{run, JobSpec, SsdConfig};

fn cfg(name: &str, overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve(name, &ov).unwrap()
}

fn job(text: &str) -> JobSpec {
    JobSpec::from_toml_str(text, "test job").unwrap()
}

fn result(cfg: &SsdConfig, job: &JobSpec, seed: u64) -> serde_json::Value {
    common::without_wall(
        &run(cfg, job, &common::opts(seed), &mut |_, _| true)
            .unwrap()
            .result,
    )
}

#[test]
fn a_4k_read_on_the_prototype_costs_four_table_7_reads_per_channel() {
    let r = result(
        &cfg("seed002-pcm", &[]),
        &job("rw = \"randread\"\nbs = \"4KiB\"\niodepth = 1\nio_count = 200"),
        1,
    );
    // 8 lines of 512 B over 2 channels: 4 x 45.9 us on each, in parallel; the rest is the host,
    // the firmware and PCIe Gen1 x4.
    let mean = r["ops"]["read"]["latency_us"]["mean"].as_f64().unwrap();
    assert!((183.6..195.0).contains(&mean), "mean {mean} us");
    let p = &r["pcm"];
    assert_eq!(p["reads"], 1600);
    assert_eq!(p["reads_by_size"]["512"], 1600);
    assert_eq!(p["writes"], 0);
    assert!(p["energy"]["read_uj"].is_null(), "no read energy figure");
    // A NAND figure stays at zero: no request reaches the stub NAND.
    assert_eq!(r["device"]["nand_pages_read"], 0);
}

#[test]
fn small_writes_take_their_own_table_7_time() {
    // Jobs move whole sectors; the device itself takes any size from the media's minimum up.
    use ssdlab::sim::SimTime;
    let mut dev = ssdlab::Device::new(&cfg("seed002-pcm", &[]), 1).unwrap();
    let mut t = SimTime::ZERO;
    for i in 0..10u64 {
        let id = dev
            .submit(
                t,
                ssdlab::Request {
                    op: ssdlab::request::Op::Write,
                    offset: i * 4096 + 128,
                    len: 128,
                    queue: 0,
                    flags: Default::default(),
                    arrival: t,
                },
            )
            .unwrap();
        let done = dev.run_to_idle().unwrap();
        assert_eq!(done[0].0, id);
        let lat = (done[0].1 - t).as_us_f64();
        // 20.7 us of media; the rest is the host, firmware and PCIe Gen1 x4.
        assert!((20.7..30.0).contains(&lat), "{lat} us");
        t = done[0].1;
    }
    let p = dev.backend().pcm().unwrap();
    assert_eq!(p.media.writes_by_size().get(&128), Some(&10));
    assert_eq!(p.media.wear.max(), 1);
    // 10 writes x 128 B x 8 bits x 600 pJ (seed 002 Table 2).
    let (r, w) = p
        .media
        .energy_pj(p.energy.read_pj_per_bit, p.energy.write_pj_per_bit);
    assert_eq!(r, None);
    assert!((w.unwrap() - 10.0 * 128.0 * 8.0 * 600.0).abs() < 1e-6);
}

#[test]
fn same_inputs_give_identical_pcm_results() {
    let c = cfg(
        "seed002-pcm",
        &[
            "pcm.endurance.start_gap=true",
            "pcm.endurance.gap_interval=10",
            "pcm.write_pausing.enabled=true",
        ],
    );
    let j = job("rw = \"randrw\"\nbs = \"4KiB\"\niodepth = 8\nio_count = 3000");
    let a = serde_json::to_string(&result(&c, &j, 5)).unwrap();
    let b = serde_json::to_string(&result(&c, &j, 5)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn start_gap_moves_and_every_line_is_in_the_histogram() {
    let c = cfg(
        "seed002-pcm",
        &[
            "pcm.endurance.start_gap=true",
            "pcm.endurance.gap_interval=4",
        ],
    );
    let r = result(
        &c,
        &job("rw = \"randwrite\"\nbs = \"512B\"\niodepth = 4\nio_count = 4000"),
        3,
    );
    let p = &r["pcm"];
    // One move per 4 writes; each move is a line read and a line write more.
    assert_eq!(p["gap_moves"], 1000);
    assert_eq!(p["reads"], 1000);
    assert_eq!(p["writes"], 5000);
    let lines = p["wear"]["lines"].as_u64().unwrap();
    let in_hist: u64 = p["wear"]["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["lines"].as_u64().unwrap())
        .sum();
    assert_eq!(in_hist, lines);
    // One line kept as the gap: the host sees one line less.
    assert_eq!(
        r["device"]["logical_bytes"].as_u64().unwrap(),
        (lines - 1) * 512
    );
    assert!(p["wear"]["years_to_first_wear_out"].as_f64().unwrap() > 0.0);
}

#[test]
fn write_pausing_shortens_reads_behind_writes() {
    let j = job(
        "rw = \"randrw\"\nrwmixread = 50\nbs = \"512B\"\niodepth = 16\nio_count = 4000\nsize = \"64KiB\"",
    );
    let off = result(&cfg("seed002-pcm", &[]), &j, 2);
    let on = result(
        &cfg(
            "seed002-pcm",
            &[
                "pcm.write_pausing.enabled=true",
                "pcm.write_pausing.suspend_latency=\"1us\"",
            ],
        ),
        &j,
        2,
    );
    assert_eq!(off["pcm"]["write_pauses"], 0);
    assert!(on["pcm"]["write_pauses"].as_u64().unwrap() > 0);
    let read = |r: &serde_json::Value| r["ops"]["read"]["latency_us"]["mean"].as_f64().unwrap();
    assert!(read(&on) < read(&off), "{} vs {}", read(&on), read(&off));
}

#[test]
fn an_optane_class_drive_reads_faster_than_a_nand_drive_under_the_same_job() {
    let j = job("rw = \"randread\"\nbs = \"4KiB\"\niodepth = 1\nio_count = 300\nsize = \"256MiB\"");
    let nand = result(&cfg("small-tlc", &[]), &j, 1);
    let scm = result(&cfg("pcm-optane-class", &[]), &j, 1);
    let mean = |r: &serde_json::Value| r["ops"]["read"]["latency_us"]["mean"].as_f64().unwrap();
    assert!(
        mean(&scm) * 5.0 < mean(&nand),
        "{} vs {}",
        mean(&scm),
        mean(&nand)
    );
}

#[test]
fn seed_003_rates_hold_for_long_transfers() {
    // One serial resource: 1 MiB reads at 133 MB/s and writes at 40 MB/s.
    for (name, rate) in [("seed003-scm-133", 133e6), ("seed003-scm-400", 400e6)] {
        let r = result(
            &cfg(name, &[]),
            &job("rw = \"read\"\nbs = \"1MiB\"\niodepth = 4\nio_count = 40"),
            1,
        );
        let bw = r["ops"]["read"]["bandwidth_mb_s"].as_f64().unwrap() * 1e6;
        assert!((bw / rate - 1.0).abs() < 0.05, "{name}: {bw}");
        let r = result(
            &cfg(name, &[]),
            &job("rw = \"write\"\nbs = \"1MiB\"\niodepth = 4\nio_count = 20"),
            1,
        );
        let bw = r["ops"]["write"]["bandwidth_mb_s"].as_f64().unwrap() * 1e6;
        assert!((bw / 40e6 - 1.0).abs() < 0.05, "{name}: {bw}");
    }
}

#[test]
fn bad_pcm_configs_are_one_line_errors_naming_the_field() {
    let err = |name: &str, ov: &[&str]| {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        SsdConfig::resolve(name, &ov).unwrap_err().to_string()
    };
    for (ov, field) in [
        (vec!["pcm.line=\"384B\""], "pcm.line"),
        (vec!["pcm.min_access=\"1KiB\""], "pcm.min_access"),
        (vec!["pcm.channels=0"], "pcm.channels"),
        (vec!["pcm.timing.read=[\"1us\"]"], "pcm.timing.read"),
        (
            vec!["pcm.timing.sizes=[\"256B\",\"128B\",\"512B\"]"],
            "pcm.timing.sizes",
        ),
        (
            vec!["pcm.endurance.gap_interval=0"],
            "pcm.endurance.gap_interval",
        ),
        (
            vec!["pcm.energy.write_pj_per_bit=-1.0"],
            "pcm.energy.write_pj_per_bit",
        ),
        (
            vec!["pcm.timing.model=\"analytic\""],
            "pcm.timing.read_unit",
        ),
    ] {
        let e = err("seed002-pcm", &ov);
        assert!(e.contains(&format!("`{field}`")), "{ov:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // A cache buffer in front of PCM holds PCM lines: at least two of them.
    let e = err("seed002-pcm", &["cache.capacity=\"512B\""]);
    assert!(
        e.contains("`cache.capacity`") && e.contains("two 512-byte lines"),
        "{e}"
    );
    // NAND with PCM is not a PCM-only device.
    let e = err("small-tlc", &["pcm.channels=1"]);
    assert!(e.contains("pcm") || e.contains("`nand`"), "{e}");
    // PCM has no erase.
    let c = cfg("seed002-pcm", &[]);
    let mut dev = ssdlab::device::Device::new(&c, 1).unwrap();
    let r = ssdlab::device::Request {
        op: ssdlab::request::Op::Erase,
        offset: 0,
        len: 4096,
        queue: 0,
        flags: Default::default(),
        arrival: ssdlab::sim::SimTime::ZERO,
    };
    let e = dev
        .submit(ssdlab::sim::SimTime::ZERO, r)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no erase"), "{e}");
}

/// seed002-pcm (512 B lines) with a 256 KiB DDR2 cache buffer in front of it.
fn cached(mode: &str, more: &[&str]) -> SsdConfig {
    let mut ov = vec![
        "cache.capacity=\"256KiB\"",
        "cache.dram=\"ddr2\"",
        "cache.replacement=\"lru\"",
    ];
    let mode = format!("cache.mode=\"{mode}\"");
    ov.push(&mode);
    ov.extend_from_slice(more);
    cfg("seed002-pcm", &ov)
}

/// Submit one request at `t` and run the device until it is done; returns when it completed.
fn one(
    dev: &mut ssdlab::Device,
    t: ssdlab::sim::SimTime,
    op: ssdlab::request::Op,
    offset: u64,
    len: u64,
) -> ssdlab::sim::SimTime {
    let id = dev
        .submit(
            t,
            ssdlab::Request {
                op,
                offset,
                len,
                queue: 0,
                flags: Default::default(),
                arrival: t,
            },
        )
        .unwrap();
    let done = dev.run_to_idle().unwrap();
    assert_eq!(done.last().unwrap().0, id);
    done.last().unwrap().1
}

/// By hand: a 4 KiB write is 8 lines of 512 B. Write-back: the write completes from DRAM
/// with no PCM write; reading it back hits 8 lines and reads no PCM; a read elsewhere misses 8
/// lines, reads 8 PCM lines and keeps them clean; a Flush writes the 8 dirty lines in place.
#[test]
fn a_write_back_buffer_in_front_of_pcm_counts_exactly() {
    use ssdlab::request::Op;
    use ssdlab::sim::SimTime;
    let c = cached("write-back", &[]);
    let mut dev = ssdlab::Device::new(&c, 1).unwrap();
    let pcm_counts = |dev: &ssdlab::Device| {
        let m = &dev.backend().pcm().unwrap().media;
        (
            m.reads_by_size().values().sum::<u64>(),
            m.writes_by_size().values().sum::<u64>(),
        )
    };
    let t = one(&mut dev, SimTime::ZERO, Op::Write, 0, 4096);
    // Without the buffer the same write takes 4 line writes per channel (Table 7).
    assert!(t.as_us_f64() < 20.0, "{} us", t.as_us_f64());
    assert_eq!(pcm_counts(&dev), (0, 0));
    let t = one(&mut dev, t, Op::Read, 0, 4096);
    assert_eq!(pcm_counts(&dev), (0, 0));
    let t = one(&mut dev, t, Op::Read, 65536, 4096);
    assert_eq!(pcm_counts(&dev), (8, 0));
    let s = dev.cache().unwrap().stats();
    assert_eq!((s.write_misses, s.read_hits, s.read_misses), (8, 8, 8));
    assert_eq!(dev.cache().unwrap().lines_in_use(), 16);
    assert_eq!(dev.cache().unwrap().dirty_lines(), 8);
    let before = t;
    let t = one(&mut dev, t, Op::Flush, 0, 0);
    assert_eq!(pcm_counts(&dev), (8, 8));
    let m = &dev.backend().pcm().unwrap().media;
    assert_eq!(m.writes_by_size().get(&512), Some(&8));
    let s = dev.cache().unwrap().stats();
    assert_eq!(s.flushes, [0, 0, 0, 8]);
    assert_eq!(dev.cache().unwrap().dirty_lines(), 0);
    // The Flush waited for the PCM: 4 line writes on each of the 2 channels.
    assert!(
        (t - before).as_us_f64() > 4.0 * 20.0,
        "{}",
        (t - before).as_us_f64()
    );
    // The clean lines now hit.
    one(&mut dev, t, Op::Read, 65536, 4096);
    assert_eq!(pcm_counts(&dev), (8, 8));
}

/// Write-through: the write goes to the PCM as without the buffer (same completion time),
/// and the buffer keeps the lines, so reading them back reads no PCM.
#[test]
fn a_write_through_buffer_in_front_of_pcm_writes_through_and_serves_reads() {
    use ssdlab::request::Op;
    use ssdlab::sim::SimTime;
    let mut plain = ssdlab::Device::new(&cfg("seed002-pcm", &[]), 1).unwrap();
    let mut dev = ssdlab::Device::new(&cached("write-through", &[]), 1).unwrap();
    let a = one(&mut plain, SimTime::ZERO, Op::Write, 8192, 4096);
    let b = one(&mut dev, SimTime::ZERO, Op::Write, 8192, 4096);
    assert_eq!(a, b);
    let m = &dev.backend().pcm().unwrap().media;
    assert_eq!(m.writes_by_size().get(&512), Some(&8));
    one(&mut dev, b, Op::Read, 8192, 4096);
    let m = &dev.backend().pcm().unwrap().media;
    assert_eq!(m.reads_by_size().values().sum::<u64>(), 0);
    assert_eq!(dev.cache().unwrap().stats().read_hits, 8);
}

/// Whole runs: a buffer smaller than the job's range flushes on demand and in the background
/// (with write pausing too); the result has both parts' figures and repeats exactly.
#[test]
fn pcm_with_a_cache_buffer_runs_whole_jobs_deterministically() {
    for more in [
        &[
            "cache.flush_high_watermark=0.5",
            "cache.flush_low_watermark=0.25",
        ][..],
        &["pcm.write_pausing.enabled=true", "cache.ports=\"dual\""][..],
    ] {
        let c = cached("write-back", more);
        let j =
            job("rw = \"randrw\"\nbs = \"4KiB\"\niodepth = 8\nsize = \"2MiB\"\nio_count = 3000");
        let a = result(&c, &j, 5);
        let b = result(&c, &j, 5);
        assert_eq!(a, b, "{more:?}");
        let cache = &a["cache"];
        let n = |v: &serde_json::Value| v.as_u64().unwrap();
        assert!(n(&cache["read_hits"]) > 0, "{cache}");
        let f = &cache["flushes"];
        let flushed = n(&f["on_demand"]) + n(&f["background"]) + n(&f["preemptive"]);
        assert!(n(&f["on_demand"]) > 0, "{cache}");
        // Every PCM write is a flushed line (write-back: the host's writes stay in DRAM).
        assert_eq!(n(&a["pcm"]["writes"]), flushed, "{}", a["pcm"]);
        assert_eq!(a["pcm"]["writes_by_size"].as_object().unwrap().len(), 1);
        assert!(n(&a["pcm"]["reads"]) > 0, "{}", a["pcm"]);
    }
}
