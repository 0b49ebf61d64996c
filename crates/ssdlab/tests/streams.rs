//! Write streams in whole runs (docs/ftl.md, "Write streams"): data written in several streams
//! reads back as written, a stream id the device does not have is refused where it enters (job
//! field, device boundary, NVMe command), runs are deterministic, and the result carries one
//! write amplification per stream only when there are several.

mod common;

use ssdlab::device::{Device, Flags, Request};
use ssdlab::driver::nvme_regs::host_driver::HostDriver;
use ssdlab::driver::nvme_regs::{io, Controller, NvmeOptions, Sqe, Status};
use ssdlab::request::Op;
use ssdlab::sim::{Rng, SimTime};
use ssdlab::{run, JobSpec, SsdConfig};

fn small(overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

fn config_error(overrides: &[&str]) -> String {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match SsdConfig::resolve("small-tlc", &ov) {
        Ok(_) => panic!("{overrides:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

fn job(text: &str) -> JobSpec {
    JobSpec::from_toml_str(text, "test job").unwrap()
}

fn result_json(cfg: &SsdConfig, j: &JobSpec, seed: u64) -> serde_json::Value {
    common::without_wall(
        &run(cfg, j, &common::opts(seed), &mut |_, _| true)
            .unwrap()
            .result,
    )
}

/// Batches of 32 random 4 KiB writes and reads over the first 64 MiB, each write in a random
/// one of 4 streams, with the data oracle on, on a preconditioned small-tlc: every read finds
/// the latest data, and no block mixes streams.
#[test]
fn random_writes_in_four_streams_read_back_and_never_share_a_block() {
    let cfg = small(&["ftl.streams=4"]);
    let mut dev = Device::new(&cfg, 2).unwrap();
    ssdlab::run::precondition(&mut dev, &cfg, 2).unwrap();
    dev.enable_check();
    let mut rng = Rng::stream(2, "test");
    let units = (64 << 20) / 4096;
    for _ in 0..400 {
        let now = dev.now();
        for _ in 0..32 {
            let write = rng.below(3) < 2;
            let r = Request {
                op: if write { Op::Write } else { Op::Read },
                offset: rng.below(units) * 4096,
                len: 4096,
                queue: 0,
                flags: Flags::NONE.with_stream(rng.below(4) as u8),
                arrival: now,
            };
            dev.submit(now, r).unwrap();
        }
        dev.run_to_idle().unwrap();
    }
    let dc = dev.check().unwrap();
    assert!(dc.reads > 3000, "only {} reads were checked", dc.reads);
    if let Some(e) = &dc.first_error {
        panic!("data check failed: {e}");
    }
    // `check` holds that every valid unit of a host block was written by its stream.
    dev.backend().page_ftl().unwrap().check().unwrap();
    let st = dev.backend().page_ftl().unwrap().stream_stats().unwrap();
    assert!(st.iter().all(|s| s.host_units_written > 1500), "{st:?}");
}

#[test]
fn a_stream_the_device_lacks_is_refused_where_it_enters() {
    // The job field, against the config.
    let cfg = small(&["ftl.streams=2"]);
    let j = job("rw = \"randwrite\"\nio_count = 10\nstream = 2");
    let e = run(&cfg, &j, &common::opts(1), &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        e,
        "job, field `stream`: got 2, expected 0 up to 1 (ftl.streams = 2)"
    );
    // A stream above any device's.
    let e = JobSpec::from_toml_str("rw = \"write\"\nstream = 255", "j")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `stream`: got 255, expected 0 up to 254"),
        "{e}"
    );
    // Hot-cold: the device places writes itself.
    let hc = small(&["ftl.streams=2", "ftl.stream_policy=\"hot-cold\""]);
    let j1 = job("rw = \"randwrite\"\nio_count = 10\nstream = 1");
    let e = run(&hc, &j1, &common::opts(1), &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("field `stream`: got 1, expected 0: with ftl.stream_policy = \"hot-cold\""),
        "{e}"
    );
    // The device boundary.
    let mut dev = Device::new(&small(&[]), 1).unwrap();
    let r = Request {
        op: Op::Write,
        offset: 0,
        len: 4096,
        queue: 0,
        flags: Flags::NONE.with_stream(1),
        arrival: SimTime::ZERO,
    };
    let e = dev.submit(SimTime::ZERO, r).unwrap_err().to_string();
    assert!(
        e.contains(
            "write request at byte 0, field `stream`: got 1, expected 0 up to 0 (ftl.streams = 1)"
        ),
        "{e}"
    );
    // Each message is one line.
    assert!(!e.contains('\n'));
}

#[test]
fn stream_settings_are_checked_field_by_field() {
    let e = config_error(&["ftl.streams=0"]);
    assert!(
        e.contains("field `ftl.streams`: got 0, expected 1 to 255"),
        "{e}"
    );
    let e = config_error(&["ftl.stream_policy=\"hot-cold\""]);
    assert!(
        e.contains("field `ftl.stream_policy`: got \"hot-cold\" with ftl.streams = 1, expected ftl.streams = 2"),
        "{e}"
    );
    let e = config_error(&["ftl.hot_window=100"]);
    assert!(
        e.contains("field `ftl.hot_window`: set with ftl.stream_policy = \"host\""),
        "{e}"
    );
    let e = config_error(&[
        "ftl.streams=2",
        "ftl.stream_policy=\"hot-cold\"",
        "ftl.hot_window=0",
    ]);
    assert!(e.contains("field `ftl.hot_window`: got 0"), "{e}");
    // small-tlc keeps 16 spare blocks per plane and a GC threshold of 4: at most 11 streams.
    small(&["ftl.streams=11"]);
    let e = config_error(&["ftl.streams=12"]);
    assert!(
        e.contains("field `ftl.over_provisioning`")
            && e.contains(
                "but GC needs at least 17 (4 for the free-block threshold and 13 open blocks: 12 for host streams, 1 for GC)"
            ),
        "{e}"
    );
    // A GC block per stream takes one more open block per stream: at most 6 streams.
    small(&["ftl.streams=6", "ftl.gc.per_stream=true"]);
    let e = config_error(&["ftl.streams=7", "ftl.gc.per_stream=true"]);
    assert!(
        e.contains("field `ftl.over_provisioning`")
            && e.contains("and 14 open blocks: 7 for host streams, 7 for GC)"),
        "{e}"
    );
    let e = config_error(&["ftl.gc.per_stream=true"]);
    assert!(
        e.contains("field `ftl.gc.per_stream`: got true with ftl.streams = 1"),
        "{e}"
    );
    let e = config_error(&["ftl.streams=2", "cache.capacity=\"1MiB\""]);
    assert!(
        e.contains("field `ftl.streams`: got 2 with a write-back [cache]"),
        "{e}"
    );
    for e in [
        config_error(&["ftl.streams=0"]),
        config_error(&["ftl.streams=12"]),
    ] {
        assert!(!e.trim_end().contains('\n'), "{e}");
    }
    // The new fields are written out only when set: existing configs hash as before.
    assert_eq!(small(&[]).hash(), small(&["ftl.streams=1"]).hash());
}

const HOT_COLD: &str = "rw = \"randwrite\"\nbs = \"4KiB\"\niodepth = 16\nio_count = 30000\nsize = \"128MiB\"\ndistribution = \"zipf:1.1\"";

#[test]
fn results_carry_a_write_amplification_per_stream_only_with_several() {
    let one = result_json(&small(&[]), &job(HOT_COLD), 3);
    assert!(one.get("ftl").is_none(), "one stream: no ftl section");
    let cfg = small(&["ftl.streams=2", "ftl.stream_policy=\"hot-cold\""]);
    let a = result_json(&cfg, &job(HOT_COLD), 3);
    let b = result_json(&cfg, &job(HOT_COLD), 3);
    assert_eq!(a, b, "same config and seed, same result");
    let streams = a["ftl"]["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    assert!(a["ftl"].get("mapping").is_none());
    let host: u64 = streams
        .iter()
        .map(|s| s["host_units_written"].as_u64().unwrap())
        .sum();
    let gc: u64 = streams
        .iter()
        .map(|s| s["gc_units_moved"].as_u64().unwrap())
        .sum();
    assert_eq!(gc, a["device"]["gc_units_moved"].as_u64().unwrap());
    assert_eq!(host, 30000, "every 4 KiB write is one unit, in one stream");
    // A skewed workload sends writes to both.
    for s in streams {
        assert!(s["host_units_written"].as_u64().unwrap() > 1000, "{s}");
        let w = s["write_amplification"].as_f64().unwrap();
        assert!(w >= 1.0, "{s}");
    }
}

fn nvme(overrides: &[&str]) -> HostDriver {
    let c = small(overrides);
    let irq = c.interface.interrupt;
    let ctrl = Controller::new(
        &c,
        &NvmeOptions {
            lba_size: 4096,
            seed: 7,
        },
    )
    .unwrap();
    HostDriver::bring_up(ctrl, 64, irq).unwrap()
}

/// A Write with the Streams directive (DTYPE 1 in CDW12 bits 23:20, the stream in DSPEC,
/// CDW13 bits 31:16) lands in that stream; a stream the device lacks, or another directive
/// type, is Invalid Field and writes nothing.
#[test]
fn nvme_writes_carry_their_stream_in_the_streams_directive() {
    let mut d = nvme(&["ftl.streams=2"]);
    let data = vec![0x5au8; 4096];
    d.ctrl.mem.write(0x4000_0000, &data);
    let write = |dtype: u32, dspec: u32, slba: u32| Sqe {
        nsid: 1,
        prp1: 0x4000_0000,
        cdw10: slba,
        cdw12: dtype << 20,
        cdw13: dspec << 16,
        ..Sqe::new(io::WRITE)
    };
    let r = d.submit_raw(&[write(1, 1, 10)]).unwrap();
    assert!(r[0].cqe.status.is_success(), "{}", r[0].cqe.status);
    let st = d.ctrl.device().backend().streams().unwrap();
    assert_eq!((st[0].host_units_written, st[1].host_units_written), (0, 1));
    assert_eq!(d.read(10, 1).unwrap(), data);
    for (dtype, dspec) in [(1, 2), (2, 0), (1, 300)] {
        let r = d.submit_raw(&[write(dtype, dspec, 20)]).unwrap();
        assert_eq!(
            r[0].cqe.status,
            Status::INVALID_FIELD,
            "DTYPE {dtype} DSPEC {dspec}"
        );
    }
    assert_eq!(
        d.read(20, 1).unwrap(),
        vec![0u8; 4096],
        "a refused write wrote nothing"
    );
    // No directive: stream 0.
    let r = d.submit_raw(&[write(0, 0, 30)]).unwrap();
    assert!(r[0].cqe.status.is_success());
    let st = d.ctrl.device().backend().streams().unwrap();
    assert_eq!((st[0].host_units_written, st[1].host_units_written), (1, 1));
}

/// The hot/cold request sequence of the measurement below: 80 % of the writes to the first
/// 20 % of the logical space (hot, stream 1 with host hints), the rest to the other 80 % (cold,
/// stream 0). Submits one 4 KiB write at `now` while any is left.
struct HotCold {
    rng: Rng,
    left: u64,
    logical: u64,
    hints: bool,
}

impl HotCold {
    fn submit_next(&mut self, dev: &mut Device, now: SimTime) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let hot = self.logical / 5;
        let is_hot = self.rng.below(10) < 8;
        let lpn = if is_hot {
            self.rng.below(hot)
        } else {
            hot + self.rng.below(self.logical - hot)
        };
        let r = Request {
            op: Op::Write,
            offset: lpn * 4096,
            len: 4096,
            queue: 0,
            flags: Flags::NONE.with_stream(u8::from(self.hints && is_hot)),
            arrival: now,
        };
        dev.submit(now, r).unwrap();
    }
}

/// Closed loop: a completion submits the next write.
impl ssdlab::device::Driver for HotCold {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, _: ssdlab::device::Completion) {
        self.submit_next(dev, now);
    }
}

/// The measurement of docs/ftl.md ("Write streams"): small-tlc after its preconditioning, then
/// 400,000 random 4 KiB writes of [`HotCold`], the same request sequence for each setting, run
/// two ways: a closed loop of 32 writes in flight (a completion sends the next), and batches of
/// 32 each run until the device is idle (GC included) before the next. Prints the write
/// amplification, total and per stream, the simulated time and the pages programmed. Ignored
/// by default (it measures, it checks little): `cargo test --release -p ssdlab --test streams
/// -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_hot_cold_write_amplification() {
    let settings: [(&str, &[&str], bool); 6] = [
        ("1 stream", &[], false),
        ("2 streams, host hints", &["ftl.streams=2"], true),
        (
            "2 streams, host hints, GC per stream",
            &["ftl.streams=2", "ftl.gc.per_stream=true"],
            true,
        ),
        (
            "hot-cold, GC per stream",
            &[
                "ftl.streams=2",
                "ftl.stream_policy=\"hot-cold\"",
                "ftl.gc.per_stream=true",
            ],
            false,
        ),
        (
            "hot-cold",
            &["ftl.streams=2", "ftl.stream_policy=\"hot-cold\""],
            false,
        ),
        (
            "hot-cold, window L/4",
            &[
                "ftl.streams=2",
                "ftl.stream_policy=\"hot-cold\"",
                "ftl.hot_window=57344",
            ],
            false,
        ),
    ];
    for batches in [false, true] {
        for (name, over, hints) in settings {
            let cfg = small(over);
            let mut dev = Device::new(&cfg, 1).unwrap();
            ssdlab::run::precondition(&mut dev, &cfg, 1).unwrap();
            let mut w = HotCold {
                rng: Rng::stream(1, "measure"),
                left: 400_000,
                logical: cfg.logical_units(),
                hints,
            };
            // Batches: the simulated time from a batch's last write done to the device idle
            // (GC it started still running), summed.
            let mut drain = SimTime::ZERO;
            if batches {
                while w.left > 0 {
                    let now = dev.now();
                    for _ in 0..32 {
                        w.submit_next(&mut dev, now);
                    }
                    let done = dev.run_to_idle().unwrap();
                    let last = done.iter().map(|&(_, t, _)| t).max().unwrap();
                    drain += dev.now() - last;
                }
            } else {
                let now = dev.now();
                for _ in 0..32 {
                    w.submit_next(&mut dev, now);
                }
                dev.run(&mut w, u64::MAX, &mut |_, _| true).unwrap();
            }
            let f = &dev.backend().page_ftl().unwrap().stats;
            assert_eq!(f.host_units_written, 400_000);
            let waf =
                (f.host_units_written + f.gc_units_moved) as f64 / f.host_units_written as f64;
            let per: Vec<String> = dev
                .backend()
                .page_ftl()
                .unwrap()
                .stream_stats()
                .unwrap_or(&[])
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "stream {i}: {} host, {} moved, WAF {:.2}",
                        s.host_units_written,
                        s.gc_units_moved,
                        (s.host_units_written + s.gc_units_moved) as f64
                            / s.host_units_written.max(1) as f64
                    )
                })
                .collect();
            println!(
                "{} {name}: WAF {waf:.3} ({} moved; simulated {:.1} s, {:.1} s of it draining GC; {} pages programmed) {}",
                if batches { "batches" } else { "closed loop" },
                f.gc_units_moved,
                dev.now().as_secs_f64(),
                drain.as_secs_f64(),
                dev.backend().nand().unwrap().fil.counters.nand_pages_written,
                per.join("; ")
            );
            dev.backend().page_ftl().unwrap().check().unwrap();
        }
    }
}
