//! `[power]`: the NAND's arrays are charged for exactly the operations they run, the result
//! has power figures only with the section, and bad figures are refused naming the field.

mod common;

use ssdlab::stats::result::RunResult;
use ssdlab::{run, JobSpec, SsdConfig};

const T_READ_US: f64 = 60.0;
const T_PROG_US: f64 = 700.0;
const T_ERASE_US: f64 = 3000.0;

/// small-tlc cut to one die with one page type's timings, no multi-plane operations, and a
/// `[power]` whose only current is the array's for `op` (1 mA at 1 V): the array's energy in
/// millijoules is then its busy time in seconds for that kind of operation.
fn one_current(op: &str) -> SsdConfig {
    let mut o: Vec<String> = [
        "nand.channels=1",
        "nand.dies_per_package=1",
        "nand.blocks_per_plane=64",
        "nand.multiplane=false",
        "nand.timing.read=[\"60us\", \"60us\", \"60us\"]",
        "nand.timing.program=[\"700us\", \"700us\", \"700us\"]",
        "nand.timing.erase=\"3000us\"",
        "ftl.over_provisioning=0.25",
        "ftl.gc.free_threshold=0.05",
        "precondition.fill=\"none\"",
        "power.nand_vcc_v=1.0",
        "power.nand_read_ma=0.0",
        "power.nand_program_ma=0.0",
        "power.nand_erase_ma=0.0",
        "power.nand_standby_ua=0.0",
        "power.nand_io_ma=0.0",
        "power.controller_idle_mw=0.0",
        "power.controller_core_mw=0.0",
        "power.read_pj_per_bit=0.0",
        "power.write_pj_per_bit=0.0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    o.push(format!("power.nand_{op}_ma=1.0"));
    SsdConfig::resolve("small-tlc", &o).unwrap_or_else(|e| panic!("{e}"))
}

fn go(c: &SsdConfig, job: &str) -> RunResult {
    let j = JobSpec::from_toml_str(job, "test job").unwrap();
    run(c, &j, &common::opts(5), &mut |_, _| true)
        .unwrap_or_else(|e| panic!("{e}"))
        .result
}

/// Random 4 KiB writes of three times the drive, then reads: GC copies, erases, host reads.
const JOB: &str = "rw = \"randrw\"\nrwmixread = 30\nbs = \"4KiB\"\niodepth = 8\nio_count = 60000";

#[test]
fn the_arrays_are_charged_for_exactly_their_operations() {
    let busy_s = |op: &str| {
        let r = go(&one_current(op), JOB);
        let p = r.power.as_ref().expect("power figures with [power]");
        (p.energy_mj, r)
    };
    let (read_s, r) = busy_s("read");
    let d = &r.device;
    assert!(d.gc_runs > 0 && d.erases > 0, "the job must make GC run");
    // One page per operation (no multi-plane), every page type as fast: busy time = pages ×
    // the page's time. GC senses its source pages one by one, so they count as pages read.
    let want = d.nand_pages_read as f64 * T_READ_US * 1e-6;
    assert!(
        (read_s - want).abs() < 1e-9,
        "read {read_s} s, want {want} s"
    );
    let (program_s, r2) = busy_s("program");
    let want = r2.device.nand_pages_written as f64 * T_PROG_US * 1e-6;
    assert!(
        (program_s - want).abs() < 1e-9,
        "program {program_s} s, want {want} s"
    );
    let (erase_s, r3) = busy_s("erase");
    let want = r3.device.erases as f64 * T_ERASE_US * 1e-6;
    assert!(
        (erase_s - want).abs() < 1e-9,
        "erase {erase_s} s, want {want} s"
    );
    // The runs are the same run: only the power figures differ.
    assert_eq!(d.nand_pages_written, r2.device.nand_pages_written);
    assert_eq!(d.erases, r3.device.erases);
}

/// The DRAM cache buffer's energy (`cache.energy`) joins the device's power; the parts still
/// sum to the average.
#[test]
fn the_cache_buffer_s_energy_is_part_of_the_device_s_power() {
    let c = SsdConfig::resolve(
        "seed001-16g-mlc-dram-cache",
        &["power.nand_vcc_v=3.3".to_string()],
    )
    .unwrap();
    let r = go(
        &c,
        "rw = \"randwrite\"\nbs = \"4KiB\"\niodepth = 4\nio_count = 3000",
    );
    let p = r.power.as_ref().unwrap();
    let e = &r.cache.as_ref().unwrap().energy;
    let cache_mw = p.cache_mw.expect("a device with a cache");
    // mW x (energy / average power = seconds) = the cache's millijoules.
    let seconds = p.energy_mj / p.average_mw;
    assert!(
        (cache_mw * seconds - (e.dynamic_mj + e.leakage_mj)).abs() < 1e-9,
        "{cache_mw} mW over {seconds} s against {e:?}"
    );
    let parts = p.nand_array_mw
        + p.nand_standby_mw
        + p.nand_io_mw
        + p.controller_mw
        + p.data_path_mw
        + cache_mw;
    assert!((p.average_mw - parts).abs() < 1e-9);
    assert!(p.pcm_mw.is_none());
}

#[test]
fn no_power_section_no_power_figures() {
    let c = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let r = go(&c, "rw = \"randread\"\nbs = \"4KiB\"\nio_count = 100");
    assert!(r.power.is_none());
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("\"power\""));
}

#[test]
fn bad_power_figures_are_refused_naming_the_field() {
    for (set, field) in [
        ("power.nand_read_ma=-1.0", "power.nand_read_ma"),
        ("power.controller_idle_mw=nan", "power.controller_idle_mw"),
        ("power.nand_vcc_v=1e9", "power.nand_vcc_v"),
    ] {
        let e = common::refusal("small-tlc", set);
        assert!(e.contains(field) && e.contains("expected"), "{set}: {e}");
    }
}

/// A PCM-only device under `[power]` (issue 46: it was refused): no NAND parts, the controller,
/// its data path over the bytes the PCM moved, and the PCM's own energy when both of its figures
/// are given.
#[test]
fn a_pcm_only_device_has_its_controller_data_path_and_pcm_energy() {
    let with = |extra: &[&str]| {
        let mut o: Vec<String> = [
            "power.controller_idle_mw=1000.0",
            "power.controller_core_mw=0.0",
            "power.read_pj_per_bit=1.0",
            "power.write_pj_per_bit=2.0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        o.extend(extra.iter().map(|s| s.to_string()));
        SsdConfig::resolve("pcm-optane-class", &o).unwrap()
    };
    let job = "rw = \"randrw\"\nrwmixread = 50\nbs = \"4KiB\"\niodepth = 4\nio_count = 2000";
    let r = go(&with(&[]), job);
    let v = common::without_wall(&r);
    let p = r.power.as_ref().expect("a power block");
    let pcm = &v["pcm"];
    let secs = r.sim.simulated_time_s;
    let (read, written) = (
        pcm["bytes_read"].as_u64().unwrap() as f64,
        pcm["bytes_written"].as_u64().unwrap() as f64,
    );
    assert!(read > 0.0 && written > 0.0);
    // No dies: the NAND's parts are zero.
    assert_eq!(
        (p.nand_array_mw, p.nand_standby_mw, p.nand_io_mw),
        (0.0, 0.0, 0.0)
    );
    // 1 W all along, and 1 pJ per bit read, 2 per bit written (1 pJ = 1e-9 mJ).
    let want_mj = 1000.0 * secs + (read * 8.0 + written * 16.0) * 1e-9;
    assert!(
        (p.energy_mj - want_mj).abs() < 1e-9 * want_mj,
        "{} {want_mj}",
        p.energy_mj
    );
    assert!(p.pcm_mw.is_none(), "the preset gives no PCM energy figures");
    // With both PCM figures, the PCM's share joins the sum; with one, it stays out (unknown).
    let both = go(
        &with(&[
            "pcm.energy.read_pj_per_bit=5.0",
            "pcm.energy.write_pj_per_bit=50.0",
        ]),
        job,
    );
    let pb = both.power.as_ref().unwrap();
    assert!(pb.pcm_mw.unwrap() > 0.0);
    let sum = pb.controller_mw + pb.data_path_mw + pb.pcm_mw.unwrap();
    assert!((pb.average_mw - sum).abs() < 1e-9 * sum, "{pb:?}");
    let one = go(&with(&["pcm.energy.read_pj_per_bit=5.0"]), job);
    assert!(one.power.as_ref().unwrap().pcm_mw.is_none());
}

/// A PCM-only device with a write-back cache buffer under `[power]`: the buffer's DRAM joins
/// the sum beside the controller, the data path and the PCM.
#[test]
fn a_pcm_only_device_with_a_cache_buffer_sums_all_four_parts() {
    let o: Vec<String> = [
        "power.controller_idle_mw=1000.0",
        "power.read_pj_per_bit=1.0",
        "power.write_pj_per_bit=2.0",
        "pcm.energy.read_pj_per_bit=5.0",
        "pcm.energy.write_pj_per_bit=50.0",
        "cache.capacity=\"256KiB\"",
        "cache.dram=\"ddr2\"",
        "cache.mode=\"write-back\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cfg = SsdConfig::resolve("pcm-optane-class", &o).unwrap();
    let job = "rw = \"randrw\"\nrwmixread = 50\nbs = \"4KiB\"\niodepth = 4\nsize = \"1MiB\"\nio_count = 2000";
    let r = go(&cfg, job);
    let p = r.power.as_ref().expect("a power block");
    let (cache, pcm) = (p.cache_mw.unwrap(), p.pcm_mw.unwrap());
    assert!(cache > 0.0 && pcm > 0.0, "{p:?}");
    let sum = p.controller_mw + p.data_path_mw + cache + pcm;
    assert!((p.average_mw - sum).abs() < 1e-9 * sum, "{p:?}");
}
