//! The read path (issue 43, point 3): sequential small reads are no slower than random ones.
//! Before page-register hits, four consecutive 4 KiB reads of one 16 KiB page queued on one
//! die and each paid tR, so sequential 4 KiB reads at QD4 ran at 71 % of random ones on
//! modern-tlc-pcie4.

mod common;

use ssdlab::config::BackendKind;
use ssdlab::{run, JobSpec, SsdConfig};

/// Every shipped preset with NAND behind an FTL of its own (raw and PCM-only devices have no
/// job reads through an FTL), its capacity cut to at most 64 blocks per plane so that its
/// sequential fill is quick: the timing (tR, bus, planes, dies, channels) is the preset's.
fn nand_presets() -> Vec<(String, SsdConfig)> {
    let mut out = Vec::new();
    for name in ssdlab::config::presets::preset_names() {
        let base = SsdConfig::resolve(name, &[]).unwrap();
        if !matches!(
            base.backend_kind(),
            BackendKind::Page | BackendKind::Cached | BackendKind::BlockMapped
        ) {
            continue;
        }
        let blocks = base.nand.blocks_per_plane.min(64);
        let sets = vec![
            format!("nand.blocks_per_plane={blocks}"),
            "precondition.fill=\"sequential\"".to_string(),
            "precondition.random_overwrite=0".to_string(),
        ];
        out.push((name.to_string(), SsdConfig::resolve(name, &sets).unwrap()));
    }
    assert!(
        out.len() >= 5,
        "expected the NAND presets, got {}",
        out.len()
    );
    out
}

fn iops(cfg: &SsdConfig, rw: &str, qd: u32) -> f64 {
    // Half the logical space: a random read finds mapped data anywhere a sequential one could.
    let size = cfg.logical_bytes() / 2 / 4096 * 4096;
    let j = JobSpec::from_toml_str(
        &format!("rw = \"{rw}\"\nbs = \"4KiB\"\niodepth = {qd}\nsize = {size}\nio_count = 3000"),
        "read-path job",
    )
    .unwrap();
    let r = run(cfg, &j, &common::opts(3), &mut |_, _| true)
        .unwrap()
        .result;
    r.ops["read"].iops
}

#[test]
fn sequential_4k_reads_are_no_slower_than_random_ones_on_every_nand_preset() {
    let mut failures = Vec::new();
    for (name, cfg) in nand_presets() {
        for qd in [1, 4, 32] {
            let seq = iops(&cfg, "read", qd);
            let rand = iops(&cfg, "randread", qd);
            // 1 % for the noise of a short random run (which dies the random addresses hit).
            if seq < 0.99 * rand {
                failures.push(format!(
                    "{name} QD{qd}: sequential {seq:.0} IOPS, random {rand:.0}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
