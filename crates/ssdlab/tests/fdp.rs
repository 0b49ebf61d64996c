//! Flexible Data Placement in whole runs (docs/fdp.md): a job's placement identifiers reach
//! their handles and the result counts each handle's bytes; a placement identifier the drive
//! lacks is refused naming the field; the register-level controller takes the data placement
//! directive, logs an invalid one as an event, and its log pages agree with the result.

mod common;

use ssdlab::driver::nvme_regs::host_driver::HostDriver;
use ssdlab::driver::nvme_regs::structs::{
    decode_fdp_configs, decode_fdp_events, decode_fdp_stats, decode_fdp_usage, to_json,
};
use ssdlab::driver::nvme_regs::{io, Controller, NvmeOptions, Sqe};
use ssdlab::{run, JobSpec, SsdConfig};

fn small(overrides: &[&str]) -> SsdConfig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve("small-tlc", &ov).unwrap()
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

/// Random 4 KiB writes over 64 MiB, `n` of them.
fn writes(n: u64) -> String {
    format!("rw = \"randwrite\"\nbs = \"4KiB\"\niodepth = 8\nsize = \"64MiB\"\nio_count = {n}\n")
}

/// Round robin over placement identifiers 1 and 3 sends each half the writes; the handles
/// nobody named get none; host bytes add up to the job's, and media bytes are at least them.
#[test]
fn a_job_s_placement_ids_reach_their_handles_and_the_result_counts_each() {
    let cfg = small(&["fdp.handles=4", "fdp.ruh_type=\"initially-isolated\""]);
    let j = job(&format!("{}placement_ids = [1, 3]\n", writes(4000)));
    let r = result_json(&cfg, &j, 1);
    let f = &r["device"]["fdp"];
    assert_eq!(f["handles"], 4);
    assert_eq!(f["ruh_type"], "initially-isolated");
    let host = |h: usize| f["per_handle"][h]["host_bytes_written"].as_u64().unwrap();
    assert_eq!((host(0), host(2)), (0, 0));
    assert_eq!((host(1), host(3)), (2000 * 4096, 2000 * 4096));
    assert_eq!(f["host_bytes_written"].as_u64().unwrap(), 4000 * 4096);
    assert!(f["media_bytes_written"].as_u64().unwrap() >= 4000 * 4096);
    assert!(f["write_amplification"].as_f64().unwrap() >= 1.0);
    // The handles are the FDP result's, not a second listing as streams.
    assert!(r.get("ftl").is_none_or(|x| x.get("streams").is_none()));
    // Deterministic.
    assert_eq!(r, result_json(&cfg, &j, 1));
}

/// A placement identifier the drive does not have is one line naming the field, the value
/// and the handles there are, in `stream` as in `placement_ids`.
#[test]
fn a_placement_id_the_drive_lacks_is_refused_naming_the_field() {
    let cfg = small(&["fdp.handles=2"]);
    for (extra, field) in [
        ("stream = 2\n", "stream"),
        ("placement_ids = [0, 5]\n", "placement_ids"),
    ] {
        let j = job(&format!("{}{extra}", writes(4000)));
        let e = run(&cfg, &j, &common::opts(1), &mut |_, _| true)
            .err()
            .unwrap_or_else(|| panic!("{extra} accepted"))
            .to_string();
        assert!(e.contains(&format!("field `{field}`")), "{e}");
        assert!(e.contains("placement identifier"), "{e}");
        assert!(e.contains("fdp.handles = 2"), "{e}");
        assert!(!e.contains('\n'), "{e}");
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

fn json(fields: &ssdlab::driver::nvme_regs::structs::Fields) -> serde_json::Value {
    serde_json::from_str(&to_json(fields)).unwrap()
}

/// Writes with the data placement directive (DTYPE 2) land in the handle their placement
/// identifier names; one naming no handle lands in handle 0 and is logged as an Invalid
/// Placement Identifier host event (03h). The log pages say so with nvme-cli's keys.
#[test]
fn the_controller_takes_the_placement_directive_and_its_log_pages_agree() {
    let mut d = nvme(&["fdp.handles=2", "fdp.reclaim_groups=2"]);
    assert!(d.fdp_supported());
    d.ctrl.mem.write(0x4000_0000, &vec![0x5au8; 4096]);
    let write = |dspec: u32, slba: u32| Sqe {
        nsid: 1,
        prp1: 0x4000_0000,
        cdw10: slba,
        cdw12: 2 << 20,
        cdw13: dspec << 16,
        ..Sqe::new(io::WRITE)
    };
    let done = d
        .submit_raw(&[write(1, 10), write(1, 11), write(7, 12)])
        .unwrap();
    assert!(done.iter().all(|x| x.cqe.status.is_success()));
    let st = d.ctrl.device().backend().streams().unwrap();
    assert_eq!((st[0].host_units_written, st[1].host_units_written), (1, 2));

    let configs = json(&decode_fdp_configs(&d.fdp_log(0x20, 4096, false).unwrap()));
    assert_eq!(configs["n"], 0);
    let c0 = &configs["configs"][0];
    assert_eq!(
        (c0["nrg"].as_u64(), c0["nruh"].as_u64()),
        (Some(2), Some(2))
    );
    // The default reclaim unit: a reclaim group's superblock, 8 planes × 512 KiB.
    assert_eq!(c0["runs"].as_u64(), Some(8 * 512 * 1024));
    assert_eq!(c0["ruhs"][1]["ruht"], 2, "persistently isolated");

    let usage = json(&decode_fdp_usage(&d.fdp_log(0x21, 4096, false).unwrap()));
    assert_eq!(usage["nruh"], 2);
    assert_eq!(usage["ruhus"].as_array().unwrap().len(), 2);

    let stats = json(&decode_fdp_stats(&d.fdp_log(0x22, 64, false).unwrap()));
    let fdp = d.ctrl.device().fdp_result().unwrap();
    assert_eq!(stats["hbmw"].as_u64(), Some(3 * 4096));
    assert_eq!(stats["hbmw"].as_u64(), Some(fdp.host_bytes_written));
    assert_eq!(stats["mbmw"].as_u64(), Some(fdp.media_bytes_written));
    assert_eq!(stats["mbe"].as_u64(), Some(fdp.media_bytes_erased));

    let host = json(&decode_fdp_events(&d.fdp_log(0x23, 4096, true).unwrap()));
    assert_eq!(host["n"], 1);
    let e = &host["events"][0];
    assert_eq!((e["type"].as_u64(), e["pid"].as_u64()), (Some(3), Some(7)));
    assert_eq!(
        (e["fdpef"].as_u64(), e["nsid"].as_u64()),
        (Some(3), Some(1))
    );
    let ctrl_events = json(&decode_fdp_events(&d.fdp_log(0x23, 4096, false).unwrap()));
    assert_eq!(ctrl_events["n"], 0);
}

/// Without `[fdp]` the data placement directive is Invalid Field and the FDP log pages are
/// refused; with it, the Streams directive is (the two do not mix).
#[test]
fn the_directives_belong_to_their_own_drives() {
    let write = |dtype: u32| Sqe {
        nsid: 1,
        prp1: 0x4000_0000,
        cdw10: 5,
        cdw12: dtype << 20,
        cdw13: 1 << 16,
        ..Sqe::new(io::WRITE)
    };
    let mut plain = nvme(&["ftl.streams=2"]);
    assert!(!plain.fdp_supported());
    let r = plain.submit_raw(&[write(2)]).unwrap();
    assert!(!r[0].cqe.status.is_success());
    assert!(plain.fdp_log(0x22, 64, false).is_err());
    let mut fdp = nvme(&["fdp.handles=2"]);
    let r = fdp.submit_raw(&[write(1)]).unwrap();
    assert!(!r[0].cqe.status.is_success());
}

/// The job driver of the register-level host sends a job's stream as the placement
/// identifier; one the drive lacks is the job's error, naming the field.
#[test]
fn the_register_level_job_driver_sends_the_job_s_placement_id() {
    use ssdlab::driver::nvme_regs::workload::run_job;
    let mut d = nvme(&["fdp.handles=2"]);
    run_job(&mut d, &job(&format!("{}stream = 1\n", writes(100))), 1).unwrap();
    let f = d.ctrl.device().fdp_result().unwrap();
    assert_eq!(f.per_handle[1].host_bytes_written, 100 * 4096);
    assert_eq!(f.per_handle[0].host_bytes_written, 0);
    let e = run_job(&mut d, &job(&format!("{}stream = 4\n", writes(100))), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `stream`") && e.contains("fdp.handles = 2"),
        "{e}"
    );
}
