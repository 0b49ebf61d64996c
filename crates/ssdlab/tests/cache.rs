//! The cache buffer in whole runs: the data oracle through every replacement policy, write mode
//! and port mode; cached writes are fast; dual port flushes pre-emptively.

mod common;

use proptest::prelude::*;
use ssdlab::{JobSpec, SsdConfig};

fn cached(extra: &[&str]) -> SsdConfig {
    let mut ov: Vec<String> = vec![
        "cache.capacity=\"256KiB\"".into(),
        "cache.dram=\"ddr2\"".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Reads always find the latest data, wherever it is, under every policy and port mode,
    /// with partial-unit writes, trims and flush commands mixed in.
    #[test]
    fn reads_always_find_the_latest_data(
        replacement in prop_oneof![Just("lru"), Just("clock"), Just("fifo")],
        mode in prop_oneof![Just("write-back"), Just("write-through")],
        ports in prop_oneof![Just("single"), Just("dual")],
        background in any::<bool>(),
        read_allocate in any::<bool>(),
        seed in 0u64..1000,
        bs in prop_oneof![Just("4KiB"), Just("2KiB"), Just("16KiB"), Just("64KiB")],
        partial in prop_oneof![Just("read-first"), Just("merge-at-flush")],
    ) {
        let hw = if background { "0.5" } else { "0.0" };
        let cfg = cached(&[
            &format!("cache.replacement=\"{replacement}\""),
            &format!("cache.mode=\"{mode}\""),
            &format!("cache.ports=\"{ports}\""),
            &format!("cache.flush_high_watermark={hw}"),
            "cache.flush_low_watermark=0.25",
            &format!("cache.read_allocate={read_allocate}"),
            &format!("cache.partial_lines=\"{partial}\""),
        ]);
        // A small hot region so reads and writes collide often.
        let job = format!("rw = \"randrw\"\nrwmixread = 50\nbs = \"{bs}\"\niodepth = 8\nsize = \"4MiB\"\nio_count = 1500");
        common::run_checked(&cfg, &job, seed, false);
    }
}

fn write_latency_us(cfg: &SsdConfig, job: &str) -> (f64, serde_json::Value) {
    let spec = JobSpec::from_toml_str(job, "job").unwrap();
    let out = ssdlab::run(cfg, &spec, &common::opts(1), &mut |_, _| true).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.result.to_json()).unwrap();
    (v["ops"]["write"]["latency_us"]["mean"].as_f64().unwrap(), v)
}

#[test]
fn cached_writes_complete_at_dram_speed_until_the_buffer_fills() {
    let none = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let job = "rw = \"randwrite\"\nbs = \"4KiB\"\niodepth = 1\nio_count = 20";
    let (uncached, _) = write_latency_us(&none, job);
    let (cached_us, v) = write_latency_us(&cached(&[]), job);
    assert!(cached_us < 20.0, "cached write mean {cached_us} µs");
    assert!(uncached > 400.0, "uncached write mean {uncached} µs");
    assert_eq!(v["cache"]["write_misses"].as_u64().unwrap(), 20);
    assert_eq!(v["cache"]["flushes"]["on_demand"].as_u64().unwrap(), 0);
}

#[test]
fn a_full_buffer_flushes_on_demand_and_dual_port_flushes_ahead() {
    // 2 MiB of buffer (512 lines: a 26-line pre-emptive window) over a 6 MiB hot region.
    let job = "rw = \"randrw\"\nrwmixread = 50\nbs = \"4KiB\"\niodepth = 8\nsize = \"6MiB\"\nio_count = 12000";
    let big = |ports: &str| {
        cached(&[
            "cache.capacity=\"2MiB\"",
            &format!("cache.ports=\"{ports}\""),
        ])
    };
    let (_, single) = write_latency_us(&big("single"), job);
    let (_, dual) = write_latency_us(&big("dual"), job);
    assert!(single["cache"]["flushes"]["on_demand"].as_u64().unwrap() > 0);
    assert_eq!(
        single["cache"]["flushes"]["preemptive"].as_u64().unwrap(),
        0
    );
    assert!(dual["cache"]["flushes"]["preemptive"].as_u64().unwrap() > 0);
    assert!(
        dual["cache"]["flushes"]["on_demand"].as_u64().unwrap()
            < single["cache"]["flushes"]["on_demand"].as_u64().unwrap(),
        "pre-emptive flushing should leave fewer dirty evictions"
    );
}

#[test]
fn no_cache_section_means_no_cache_in_the_result() {
    let (_, v) = write_latency_us(
        &SsdConfig::resolve("small-tlc", &[]).unwrap(),
        "rw = \"randwrite\"\nio_count = 10",
    );
    assert!(v.get("cache").is_none());
}

/// Lines holding part of their unit are built on the page FTL's whole map: any other back end
/// is refused, naming the field and what it needs.
#[test]
fn merge_at_flush_needs_the_page_ftl_with_its_whole_map() {
    let e = common::refusal("mqsim-default", "cache.partial_lines=\"merge-at-flush\"");
    assert!(
        e.contains("cache.partial_lines")
            && e.contains("with the cached back end")
            && e.contains("ftl.mapping = \"full\""),
        "{e}"
    );
    assert!(SsdConfig::resolve(
        "seed001-16g-mlc-dram-cache",
        &["cache.partial_lines=\"merge-at-flush\"".to_string()]
    )
    .is_ok());
}

/// Merging at flush time takes the write-time read off a partial write: on a drive whose
/// units hold data, 2 KiB writes into 4 KiB units complete at DRAM speed while the buffer has
/// room, where reading first waits for NAND.
#[test]
fn partial_writes_need_no_read_when_merged_at_flush() {
    let job = "rw = \"randwrite\"\nbs = \"2KiB\"\niodepth = 1\nio_count = 40";
    let at = |partial: &str| {
        let cfg = cached(&[
            &format!("cache.partial_lines=\"{partial}\""),
            "precondition.fill=\"sequential\"",
        ]);
        write_latency_us(&cfg, job)
    };
    let (first, _) = at("read-first");
    let (merged, v) = at("merge-at-flush");
    assert!(
        merged * 5.0 < first,
        "merged {merged} µs, read first {first} µs"
    );
    assert_eq!(v["cache"]["write_waits"], 0);
    // Nothing flushed yet: no merge read either; the figures are there only with the option.
    assert_eq!(v["cache"]["partial"]["merge_reads"], 0);
    let (_, v) = at("read-first");
    assert!(v["cache"].get("partial").is_none());
}

/// Merging at flush time, through whole checked runs: 2 KiB writes and reads into 4 KiB units
/// on a used drive, a buffer small enough to flush on demand; the data oracle checks every read
/// and every merge (the rest of a unit comes from the version the line was taken over), and
/// the runs do merge at flush and miss on lines holding another part of a unit.
#[test]
fn merged_lines_keep_the_latest_data_in_checked_runs() {
    for ports in ["single", "dual"] {
        let cfg = cached(&[
            "cache.partial_lines=\"merge-at-flush\"",
            &format!("cache.ports=\"{ports}\""),
        ]);
        let job = "rw = \"randrw\"\nrwmixread = 40\nbs = \"2KiB\"\niodepth = 8\nsize = \"2MiB\"\nio_count = 3000";
        let dev = common::run_checked(&cfg, job, 7, true);
        let s = dev.cache().unwrap().stats();
        assert!(s.merge_reads > 0, "{ports}: no flush merged");
        assert!(
            s.partial_read_misses > 0,
            "{ports}: no read missed a partial line"
        );
    }
}
