//! HFSL (`driver::hfsl`) driving the fusion device: the raw commands its map plans run on the
//! device without a refusal, and the device's own counts agree with HFSL's.

use ssdlab::driver::hfsl::{self, HostIo};
use ssdlab::SsdConfig;

fn fusion(extra: &[&str]) -> SsdConfig {
    let mut o = vec!["nand.blocks_per_plane=8".to_string()];
    o.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("seed002-fusion", &o).unwrap()
}

/// A deterministic mix: writes of 512 B to 8 KiB (every fifth flagged metadata) and reads,
/// over `pages` logical pages.
fn mix(n: u64, pages: u64) -> Vec<HostIo> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let sectors = 1 + (x >> 40) % 16;
            let sector = (x >> 8) % (pages * 4 - sectors);
            HostIo {
                write: !x.is_multiple_of(3),
                offset: sector * 512,
                len: sectors * 512,
                meta: x.is_multiple_of(5),
            }
        })
        .collect()
}

#[test]
fn hfsl_runs_on_the_fusion_device_and_counts_match_the_device() {
    let cfg = fusion(&["hfsl.ssw=\"2KiB\"", "pcm.chip_capacity=\"4KiB\""]);
    let ios = mix(3000, 4000);
    let r = hfsl::run(&cfg, 1, 4000, &ios).unwrap();
    assert_eq!(r.requests, 3000);
    let c = &r.counters;
    assert!(
        c.nand_updates > 0 && c.evictions > 0 && c.writes_to_pcm > 0,
        "{c:?}"
    );
    assert_eq!(
        r.raw_commands,
        c.pcm_reads + c.pcm_writes + c.nand_reads + c.nand_programs + c.nand_erases
    );
    // The PCM holds 64 KiB / 2 KiB = 32 pages.
    assert!(r.pcm_pages <= 32 && r.pcm_pages > 0);
    assert!(r.end.as_us_f64() > 0.0);
}

#[test]
fn a_larger_ssw_sends_more_to_pcm_and_updates_fewer_nand_pages() {
    let ios = mix(2000, 2000);
    let run = |ssw: &str| {
        let cfg = fusion(&[&format!("hfsl.ssw=\"{ssw}\"")]);
        hfsl::run(&cfg, 1, 2000, &ios).unwrap().counters
    };
    let small = run("512B");
    let page = run("2KiB");
    assert!(page.writes_to_pcm > small.writes_to_pcm);
    assert!(page.nand_programs < small.nand_programs);
}

#[test]
fn bad_hfsl_settings_name_the_field() {
    for (set, field) in [
        ("hfsl.ssw=\"4KiB\"", "hfsl.ssw"),
        ("hfsl.cache_ratio=1.5", "hfsl.cache_ratio"),
        ("hfsl.sub_page=\"3B\"", "hfsl.sub_page"),
    ] {
        let e = SsdConfig::resolve("seed002-fusion", &[set.into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(field) && !e.contains('\n'), "{e}");
    }
    let e = SsdConfig::resolve("small-tlc", &["hfsl.ssw=\"512B\"".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`hfsl`"), "{e}");
}

/// Speed: raw device commands per wall-clock second under HFSL (run with `--release
/// --ignored --nocapture`).
#[test]
#[ignore]
fn speed() {
    let cfg = fusion(&["hfsl.ssw=\"2KiB\""]);
    let ios = mix(200_000, 4000);
    let t = std::time::Instant::now();
    let r = hfsl::run(&cfg, 1, 4000, &ios).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} host requests, {} raw commands in {s:.2} s: {:.0} raw commands/s",
        r.requests,
        r.raw_commands,
        r.raw_commands as f64 / s
    );
}
