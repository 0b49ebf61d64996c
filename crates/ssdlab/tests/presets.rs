//! The presets of real drives come within 15 % of their data sheets' headline figures:
//! sequential read and write MB/s (128 KiB, QD32) and random 4 KiB read and write IOPS (4 workers
//! at QD32). Each preset runs with fewer blocks per plane than the drive has: the figures come
//! from dies, planes, link and controller, which stay, and these runs never reach GC.

mod common;

use ssdlab::{run, JobSpec, SsdConfig};

/// The four headline figures of `preset`: (seq read MB/s, seq write MB/s, rand read IOPS,
/// rand write IOPS), with `blocks` blocks per plane.
fn headline(preset: &str, blocks: u32) -> [f64; 4] {
    let c = SsdConfig::resolve(preset, &[format!("nand.blocks_per_plane={blocks}")])
        .unwrap_or_else(|e| panic!("{e}"));
    let go = |job: &str| {
        let j = JobSpec::from_toml_str(job, "headline job").unwrap();
        run(&c, &j, &common::opts(1), &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{preset}: {e}"))
            .result
    };
    let seq = |rw: &str| format!("rw = \"{rw}\"\nbs = \"128KiB\"\niodepth = 32\nio_count = 2000");
    let rand = |rw: &str| {
        format!("rw = \"{rw}\"\nbs = \"4KiB\"\niodepth = 32\nnumjobs = 4\nio_count = 20000")
    };
    [
        go(&seq("read")).total.bandwidth_mb_s,
        go(&seq("write")).total.bandwidth_mb_s,
        go(&rand("randread")).total.iops,
        go(&rand("randwrite")).total.iops,
    ]
}

fn assert_within_15_percent(preset: &str, got: [f64; 4], sheet: [f64; 4]) {
    let names = [
        "seq read MB/s",
        "seq write MB/s",
        "rand read IOPS",
        "rand write IOPS",
    ];
    for i in 0..4 {
        let off = got[i] / sheet[i] - 1.0;
        assert!(
            off.abs() <= 0.15,
            "{preset} {}: {:.0} against the data sheet's {:.0} ({:+.1} %)",
            names[i],
            got[i],
            sheet[i],
            off * 100.0
        );
    }
}

#[test]
fn sata_870_evo_class_meets_its_data_sheet() {
    // Samsung 870 EVO: 560 / 530 MB/s, 98,000 / 88,000 IOPS (every capacity).
    let got = headline("sata-tlc-870evo", 64);
    assert_within_15_percent("sata-tlc-870evo", got, [560.0, 530.0, 98_000.0, 88_000.0]);
}
