//! Each back end (`ctrl::backend::Backend`) answers for itself through the device: which kind
//! it is, what is mapped (a block-status query's answer), wear and read-only state (SMART's),
//! and its figures in a run's result. Before the back end had a type, these questions read the
//! page-mapped FTL whatever the device held: a block-mapped device said nothing was mapped.

use ssdlab::config::BackendKind;
use ssdlab::device::{Device, Flags, Request, Status};
use ssdlab::request::Op;
use ssdlab::SsdConfig;

fn config(preset: &str, sets: &[&str]) -> SsdConfig {
    let mut all: Vec<String> = vec![
        "precondition.fill=\"none\"".into(),
        "precondition.random_overwrite=0.0".into(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    SsdConfig::resolve(preset, &all).unwrap()
}

/// The seven back ends, each on the smallest preset that has it.
fn all() -> Vec<(BackendKind, SsdConfig)> {
    vec![
        (BackendKind::Page, config("small-tlc", &[])),
        (
            BackendKind::Cached,
            config(
                "small-tlc",
                &["ftl.mapping=\"cached\"", "ftl.mapping_cache=\"64KiB\""],
            ),
        ),
        (
            BackendKind::BlockMapped,
            config(
                "small-tlc",
                &[
                    "ftl.kind=\"bast\"",
                    "ftl.map_unit=\"16KiB\"",
                    "ftl.log_blocks=2",
                ],
            ),
        ),
        (
            BackendKind::Raw,
            config(
                "small-tlc",
                &["ftl.kind=\"none\"", "ftl.over_provisioning=0.0"],
            ),
        ),
        (BackendKind::Pcm, config("seed002-pcm", &[])),
        (BackendKind::Fusion, config("seed002-fusion", &[])),
        (BackendKind::Zoned, config("zns-tlc", &[])),
    ]
}

fn one(dev: &mut Device, op: Op, offset: u64, len: u64) -> Status {
    let now = dev.now();
    let r = Request {
        op,
        offset,
        len,
        queue: 0,
        flags: Flags::NONE,
        arrival: now,
    };
    dev.submit(now, r).unwrap();
    let done = dev.run_to_idle().unwrap();
    assert_eq!(done.len(), 1);
    done[0].2
}

#[test]
fn each_back_end_is_the_kind_its_config_names() {
    for (kind, cfg) in all() {
        assert_eq!(cfg.backend_kind(), kind, "{}", cfg.meta.name);
        let dev = Device::new(&cfg, 1).unwrap();
        assert_eq!(dev.backend().kind(), kind, "{}", cfg.meta.name);
        // Each answers with its own parts, and none has another's.
        let b = dev.backend();
        assert_eq!(
            b.raw().is_some(),
            matches!(kind, BackendKind::Raw | BackendKind::Fusion),
            "{kind:?}"
        );
        assert_eq!(
            b.pcm().is_some(),
            matches!(kind, BackendKind::Pcm | BackendKind::Fusion),
            "{kind:?}"
        );
        assert_eq!(
            b.block_mapped().is_some(),
            kind == BackendKind::BlockMapped,
            "{kind:?}"
        );
        assert_eq!(b.zoned().is_some(), kind == BackendKind::Zoned, "{kind:?}");
        // A PCM-only device has no NAND layer at all (no stub NAND, no idle FTL); every
        // other back end has all of them. The page FTL is the device's only where it keeps
        // the map.
        let nand = kind != BackendKind::Pcm;
        assert_eq!(b.nand().is_some(), nand, "{kind:?}");
        let page = matches!(kind, BackendKind::Page | BackendKind::Cached);
        assert_eq!(b.page_ftl().is_some(), page, "{kind:?}");
    }
}

#[test]
fn what_is_mapped_is_the_back_ends_own_map() {
    for (kind, cfg) in all() {
        let mut dev = Device::new(&cfg, 1).unwrap();
        let unit = cfg.map_unit_bytes();
        let far = dev.capacity_bytes() / unit - 1;
        if kind == BackendKind::Pcm {
            // Updated in place: every line holds data.
            assert!(dev.is_mapped(0) && dev.is_mapped(far));
            continue;
        }
        let page = dev.backend().nand().unwrap().geo.page_bytes;
        assert!(!dev.is_mapped(0), "{kind:?}: nothing written yet");
        assert_eq!(one(&mut dev, Op::Write, 0, page), Status::Ok, "{kind:?}");
        assert!(dev.is_mapped(0), "{kind:?}: a written unit is mapped");
        assert!(!dev.is_mapped(far), "{kind:?}: an unwritten one is not");
        match kind {
            BackendKind::Raw | BackendKind::Fusion => {
                // The block's erase makes its pages free again.
                let block = page * dev.backend().nand().unwrap().geo.pages_per_block as u64;
                assert_eq!(one(&mut dev, Op::Erase, 0, block), Status::Ok);
                assert!(!dev.is_mapped(0), "{kind:?}: erased");
                assert_eq!(dev.max_erase_count(), 1, "{kind:?}");
            }
            BackendKind::Zoned => {
                // A zone reset erases its blocks: its data is gone.
                assert_eq!(one(&mut dev, Op::ZoneReset, 0, 0), Status::Ok);
                assert!(!dev.is_mapped(0), "{kind:?}: reset");
                assert_eq!(dev.max_erase_count(), 1, "{kind:?}");
            }
            _ => {
                assert_eq!(one(&mut dev, Op::Trim, 0, page), Status::Ok);
                assert!(!dev.is_mapped(0), "{kind:?}: trimmed");
            }
        }
    }
}

#[test]
fn wear_and_read_only_state_come_from_the_back_end() {
    for (kind, cfg) in all() {
        let dev = Device::new(&cfg, 1).unwrap();
        assert!(!dev.read_only(), "{kind:?}");
        assert_eq!(dev.available_spare_percent(), 100.0, "{kind:?}");
        assert_eq!(dev.percentage_used(), None, "{kind:?}: no [reliability]");
        assert_eq!(dev.max_erase_count(), 0, "{kind:?}");
    }
    // With [reliability], the wear model of whoever keeps the blocks answers: the page FTL,
    // the block-mapped FTL, the zoned firmware (raw NAND and PCM refuse the section).
    for (kind, cfg) in all() {
        if matches!(
            kind,
            BackendKind::Raw | BackendKind::Pcm | BackendKind::Fusion
        ) {
            continue;
        }
        let mut cfg = cfg;
        cfg.reliability = Some(Default::default());
        let dev = Device::new(&cfg, 1).unwrap();
        assert_eq!(dev.percentage_used(), Some(0.0), "{kind:?}");
        assert_eq!(dev.available_spare_percent(), 100.0, "{kind:?}");
        let w = dev.backend().wear().expect("wear figures");
        assert_eq!(w.pe_limit, 1000, "{kind:?}: TLC's rated cycles");
        assert!(!w.read_only && !dev.read_only(), "{kind:?}");
    }
}

#[test]
fn a_block_mapped_ftls_erases_are_its_own() {
    // Overwrite one logical block's pages until BAST merges: the erases are the block-mapped
    // FTL's, and the device's most-erased block is read from its records.
    let cfg = config(
        "small-tlc",
        &[
            "ftl.kind=\"bast\"",
            "ftl.map_unit=\"16KiB\"",
            "ftl.log_blocks=2",
        ],
    );
    let mut dev = Device::new(&cfg, 1).unwrap();
    let page = dev.backend().nand().unwrap().geo.page_bytes;
    let ppb = dev.backend().nand().unwrap().geo.pages_per_block as u64;
    for round in 0..4 {
        for p in 0..ppb {
            assert_eq!(
                one(&mut dev, Op::Write, p * page, page),
                Status::Ok,
                "{round}"
            );
        }
    }
    let cfg = dev.config().clone();
    let merged = dev.backend().figures(&cfg, 1.0, &|_| 0.0).device;
    assert!(merged.erases > 0, "merges erase blocks");
    assert!(dev.max_erase_count() > 0);
    let h = dev.backend().block_mapped().unwrap();
    let most = h.ftl.erase_counts().iter().copied().max().unwrap() as u64;
    assert_eq!(dev.max_erase_count(), most);
    assert_eq!(merged.erases, h.ftl.counts.erases);
    // No page FTL is the device's to count erases in.
    assert!(dev.backend().page_ftl().is_none());
}

#[test]
fn the_back_end_is_named_in_the_config_and_a_named_one_must_agree() {
    let zoned = (BackendKind::Zoned, config("zns-tlc", &[]));
    for (kind, cfg) in all().into_iter().chain([zoned]) {
        // `config show` names the back end; the TOML it prints loads to the same config, with
        // the same hash (the name follows from the sections, so it stays out of the hash).
        let text = cfg.to_toml();
        let first = text.lines().next().unwrap();
        assert_eq!(first, format!("backend = \"{}\"", kind.name()));
        let again = SsdConfig::from_toml_str(&text, "shown.toml").unwrap();
        assert_eq!(again.backend, Some(kind));
        assert_eq!(again.backend_kind(), kind);
        assert_eq!(again.hash(), cfg.hash(), "{}", kind.name());
    }
    // A name the sections contradict: one line naming the field, both kinds and the way out.
    let cfg = config("small-tlc", &[]);
    let text = cfg
        .to_toml()
        .replacen("backend = \"page\"", "backend = \"pcm\"", 1);
    let e = SsdConfig::from_toml_str(&text, "mine.toml")
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("field `backend`") && e.contains("\"pcm\"") && e.contains("\"page\""),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // An unknown name is a one-line error naming the field and the names it takes.
    let text = cfg
        .to_toml()
        .replacen("backend = \"page\"", "backend = \"zoned-ish\"", 1);
    let e = SsdConfig::from_toml_str(&text, "mine.toml")
        .expect_err("refused")
        .to_string();
    assert!(e.contains("backend") && e.contains("block-mapped"), "{e}");
}

#[test]
fn write_streams_are_the_page_ftls_alone() {
    for (kind, cfg) in all() {
        let dev = Device::new(&cfg, 1).unwrap();
        assert_eq!(dev.check_stream_id(0), Ok(()), "{kind:?}");
        let e = dev.check_stream_id(1).unwrap_err().to_string();
        let own = format!("the {} back end has no write streams", kind.name());
        // The page FTL names its own field (ftl.streams = 1 here); the others say they have
        // none, rather than answer from an idle page FTL's streams.
        let page = matches!(kind, BackendKind::Page | BackendKind::Cached);
        assert_eq!(e.contains(&own), !page, "{kind:?}: {e}");
        assert_eq!(e.contains("ftl.streams = 1"), page, "{kind:?}: {e}");
    }
}

#[test]
fn free_blocks_are_the_back_ends_own_pool() {
    for (kind, cfg) in all() {
        let dev = Device::new(&cfg, 1).unwrap();
        let pool = matches!(
            kind,
            BackendKind::Page | BackendKind::Cached | BackendKind::BlockMapped
        );
        assert_eq!(dev.backend().free_blocks().is_some(), pool, "{kind:?}");
    }
    // A block-mapped FTL's first write takes a data block from its pool: the samples' free
    // blocks fall with it (they read an idle page FTL's untouched pool before).
    let (_, cfg) = all().remove(2);
    let mut dev = Device::new(&cfg, 1).unwrap();
    let before = dev.backend().free_blocks().unwrap();
    let page = dev.backend().nand().unwrap().geo.page_bytes;
    assert_eq!(one(&mut dev, Op::Write, 0, page), Status::Ok);
    let after = dev.backend().free_blocks().unwrap();
    assert!(after < before, "{before} -> {after}");
    let h = dev.backend().block_mapped().unwrap();
    assert_eq!(after, h.ftl.free_blocks_total());
}

/// A run's result on `dev`, as `run` builds it.
fn result(dev: &Device) -> ssdlab::stats::result::RunResult {
    let cfg = dev.config().clone();
    ssdlab::run::build_result(dev, &cfg, serde_json::Value::Null, 1, "done", 0.0, 0.0)
}

#[test]
fn each_back_end_reports_its_own_figures_in_the_result() {
    for (kind, cfg) in all() {
        let mut dev = Device::new(&cfg, 1).unwrap();
        // One write of a page (a line on PCM), then a read of it.
        let len = match dev.backend().nand() {
            Some(n) => n.geo.page_bytes,
            None => cfg.map_unit_bytes(),
        };
        assert_eq!(one(&mut dev, Op::Write, 0, len), Status::Ok, "{kind:?}");
        assert_eq!(one(&mut dev, Op::Read, 0, len), Status::Ok, "{kind:?}");
        let r = result(&dev);
        let d = &r.device;
        assert_eq!(d.logical_bytes, cfg.logical_bytes(), "{kind:?}");
        // The firmware ran on every back end: the HIL's core, or the PCM controller's.
        assert!(r.utilisation.controller_cpu_busy_s > 0.0, "{kind:?}");
        let Some(n) = dev.backend().nand() else {
            // PCM alone: its own block, and no NAND page, channel or die of a stub.
            let p = r.pcm.as_ref().expect("the PCM's block");
            assert_eq!((p.writes, p.reads), (1, 1), "{kind:?}");
            assert_eq!((d.nand_pages_written, d.nand_pages_read), (0, 0));
            assert_eq!((d.host_pages_written, d.erases), (0, 0));
            assert!(r.utilisation.channel.per_unit.is_empty());
            assert!(r.utilisation.die.per_unit.is_empty());
            assert!(r.ftl.is_none() && r.reliability.is_none());
            continue;
        };
        // On NAND, the FIL's programs and the HIL's read, and a channel and die per unit.
        assert!(d.nand_pages_written >= 1, "{kind:?}");
        assert_eq!(d.host_pages_read, 1, "{kind:?}");
        assert_eq!(r.utilisation.die.per_unit.len(), n.fil.die_busy().count());
        assert_eq!(
            r.utilisation.channel.per_unit.len(),
            n.fil.channel_busy().count()
        );
        assert!(r.utilisation.die.max > 0.0, "{kind:?}");
        assert_eq!(r.pcm.is_some(), kind == BackendKind::Fusion, "{kind:?}");
        // The host's page is the scheme's to count: a raw device's writes are its driver's.
        let host_pages = if kind == BackendKind::Raw || kind == BackendKind::Fusion {
            0
        } else {
            1
        };
        assert_eq!(d.host_pages_written, host_pages, "{kind:?}");
        assert_eq!(
            d.write_amplification, host_pages as f64,
            "{kind:?}: one program for one host page"
        );
        assert_eq!(d.merges.is_some(), kind == BackendKind::BlockMapped);
        assert_eq!(d.zones.is_some(), kind == BackendKind::Zoned);
        assert_eq!(
            r.ftl.as_ref().and_then(|f| f.mapping.as_ref()).is_some(),
            kind == BackendKind::Cached,
            "{kind:?}"
        );
        // Each scheme's erase spread is over its own blocks: nothing erased yet.
        assert_eq!((d.erases, d.erase_count.max), (0, 0.0), "{kind:?}");
    }
}

#[test]
fn a_scheme_with_its_own_map_counts_its_erases_and_copies_in_the_result() {
    // A raw device's erase, a zoned drive's reset, a block-mapped FTL's merges: the result's
    // erases and their spread are the back end's, where an idle page FTL would say none.
    for (kind, cfg) in all() {
        let mut dev = Device::new(&cfg, 1).unwrap();
        let Some(n) = dev.backend().nand() else {
            continue;
        };
        let (page, ppb) = (n.geo.page_bytes, n.geo.pages_per_block as u64);
        match kind {
            BackendKind::Raw | BackendKind::Fusion => {
                assert_eq!(one(&mut dev, Op::Write, 0, page), Status::Ok);
                assert_eq!(one(&mut dev, Op::Erase, 0, page * ppb), Status::Ok);
            }
            BackendKind::Zoned => {
                assert_eq!(one(&mut dev, Op::Write, 0, page), Status::Ok);
                assert_eq!(one(&mut dev, Op::ZoneReset, 0, 0), Status::Ok);
            }
            BackendKind::BlockMapped => {
                for _ in 0..4 {
                    for p in 0..ppb {
                        assert_eq!(one(&mut dev, Op::Write, p * page, page), Status::Ok);
                    }
                }
            }
            _ => continue,
        }
        let r = result(&dev);
        assert!(r.device.erases > 0, "{kind:?}");
        assert_eq!(
            r.device.erase_count.max,
            dev.max_erase_count() as f64,
            "{kind:?}"
        );
        // The periodic figures (the samples, the live server's display) follow the same
        // write amplification as the result: a block-mapped FTL's merge copies and a zoned
        // drive's fillers, where the page FTL's GC alone gave 0.
        let gc = dev.backend().gc_counts();
        assert_eq!(
            gc.write_amplification(),
            r.device.write_amplification,
            "{kind:?}"
        );
        if kind == BackendKind::BlockMapped {
            let m = r.device.merges.as_ref().unwrap();
            assert!(m.switch + m.partial + m.full > 0, "{m:?}");
            assert_eq!(r.device.gc_runs, 0, "merges, not page-FTL GC");
        }
    }
}

#[test]
fn periodic_figures_come_from_the_back_end() {
    for (kind, cfg) in all() {
        let mut dev = Device::new(&cfg, 1).unwrap();
        let b = dev.backend();
        let nand = kind != BackendKind::Pcm;
        // Channels and dies where there is NAND; none on PCM.
        assert_eq!(!b.die_busy_by(dev.now()).is_empty(), nand, "{kind:?}");
        assert_eq!(!b.channel_busy_by(dev.now()).is_empty(), nand, "{kind:?}");
        // Nothing written yet: no GC, no write amplification, whatever the scheme.
        assert_eq!(b.gc_counts().write_amplification(), 0.0, "{kind:?}");
        let len = b.nand().map_or(cfg.map_unit_bytes(), |n| n.geo.page_bytes);
        assert_eq!(one(&mut dev, Op::Write, 0, len), Status::Ok, "{kind:?}");
        // The host's units written, each back end counting its own (a block-mapped FTL in
        // pages, its map unit); a raw device's are its driver's, PCM's written in place.
        let w = dev.backend().units_written();
        let counted = !matches!(
            kind,
            BackendKind::Raw | BackendKind::Fusion | BackendKind::Pcm
        );
        assert_eq!(w.host > 0, counted, "{kind:?}");
        assert_eq!(w.device, w.host, "{kind:?}: nothing moved yet");
        let gc = dev.backend().gc_counts();
        assert_eq!(gc.host_units_written, w.host, "{kind:?}");
        assert_eq!((gc.runs, gc.units_moved), (0, 0), "{kind:?}");
    }
}

#[test]
fn smart_and_the_log_pages_ask_the_back_end() {
    use ssdlab::driver::nvme_regs::host_driver::HostDriver;
    use ssdlab::driver::nvme_regs::structs::smart_off as so;
    use ssdlab::driver::nvme_regs::{Controller, NvmeOptions};
    for (kind, cfg) in all() {
        // Wear modelled where the back end keeps the blocks' records.
        let mut cfg = cfg;
        let wears = matches!(
            kind,
            BackendKind::Page | BackendKind::Cached | BackendKind::BlockMapped | BackendKind::Zoned
        );
        if wears {
            cfg.reliability = Some(Default::default());
        }
        let c = Controller::new(&cfg, &NvmeOptions::default()).unwrap();
        let mut d = HostDriver::bring_up(c, 64, cfg.interface.interrupt).unwrap();
        let block = vec![0xA5u8; 16384];
        match kind {
            // Overwrite one logical block until BAST merges (erases).
            BackendKind::BlockMapped => {
                let ppb = d
                    .ctrl
                    .device()
                    .backend()
                    .nand()
                    .unwrap()
                    .geo
                    .pages_per_block as u64;
                for _ in 0..4 {
                    for p in 0..ppb {
                        d.write(4 * p, &block).unwrap();
                    }
                }
            }
            // A zone written and reset: its blocks erased.
            BackendKind::Zoned => {
                d.write(0, &block[..4096]).unwrap();
                d.zone_mgmt_send(0, 4, false).unwrap();
            }
            // A raw device's units are physical pages a host FTL programs in order; nothing
            // is written here.
            BackendKind::Raw | BackendKind::Fusion => {}
            _ => {
                d.write(0, &block).unwrap();
            }
        }
        let s = d.smart_log().unwrap();
        let dev = d.ctrl.device();
        assert_eq!(s[so::AVAIL_SPARE], 100, "{kind:?}");
        assert_eq!(
            s[so::CRITICAL_WARNING] & 0b1000,
            0,
            "{kind:?}: not read-only"
        );
        match dev.percentage_used() {
            Some(p) => assert_eq!(s[so::PERCENT_USED] as f64, p.ceil(), "{kind:?}"),
            None => assert_eq!(s[so::PERCENT_USED], 0, "{kind:?}: nothing erased"),
        }
        assert_eq!(dev.percentage_used().is_some(), wears, "{kind:?}");
        if matches!(kind, BackendKind::BlockMapped | BackendKind::Zoned) {
            // Their own wear, where an idle page FTL would have said none.
            assert!(dev.max_erase_count() > 0, "{kind:?}");
            assert_eq!(s[so::PERCENT_USED], 1, "{kind:?}");
        }
        // FDP's log pages are the page FTL's write streams' (`[fdp]`): without it, each back
        // end refuses them with Invalid Field.
        let e = d.fdp_log(0x20, 4096, false).unwrap_err().to_string();
        assert!(e.contains("Invalid Field"), "{kind:?}: {e}");
    }
}
