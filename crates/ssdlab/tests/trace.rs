//! Trace replay end to end: every format replays on the small preset, replay is deterministic,
//! the limits and modes do what they say, and bad traces are errors before the run.

mod common;

use ssdlab::workload::trace::replay::TraceJob;
use ssdlab::{run_replay, SsdConfig};
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn small() -> SsdConfig {
    SsdConfig::resolve("small-tlc", &[]).unwrap()
}

fn tjob(json: serde_json::Value) -> TraceJob {
    TraceJob::from_json(&json.to_string()).unwrap()
}

fn replay(cfg: &SsdConfig, job: &TraceJob, seed: u64) -> serde_json::Value {
    common::without_wall(
        &run_replay(cfg, job, &common::opts(seed), &mut |_, _| true)
            .unwrap()
            .result,
    )
}

#[test]
fn every_fixture_replays() {
    for (name, format) in [
        ("blkparse.txt", "blkparse"),
        ("umass_spc.csv", "spc"),
        ("alibaba.csv", "alibaba"),
        ("fio_v2.log", "fio"),
        ("fio_v3.log", "fio"),
        ("msr.csv", "msr"),
        ("tencent.csv", "tencent"),
        ("disksim_mixed_ws.trace", "disksim"),
    ] {
        for mode in ["timed", "afap"] {
            let j = tjob(serde_json::json!({"trace": fixture(name), "mode": mode}));
            let v = replay(&small(), &j, 1);
            let t = &v["trace"];
            assert_eq!(t["format"], format, "{name}");
            assert_eq!(t["replayed"], t["per_pass"], "{name}");
            assert_eq!(v["sim"]["stop_reason"], "trace end", "{name}");
            assert_eq!(
                v["sim"]["requests"], t["replayed"],
                "{name}: every request completes"
            );
        }
    }
}

#[test]
fn flushes_and_trims_are_replayed() {
    let j = tjob(serde_json::json!({"trace": fixture("fio_v2.log")}));
    let v = replay(&small(), &j, 1);
    assert_eq!(v["ops"]["flush"]["count"], 1);
    assert_eq!(v["ops"]["trim"]["count"], 1);
    assert_eq!(v["ops"]["write"]["count"], 2);
}

#[test]
fn replay_is_deterministic_and_keeps_the_job() {
    let cases = [
        serde_json::json!({"trace": fixture("umass_spc.csv"), "repeat": 3}),
        serde_json::json!({"trace": "model:financial1,count=3000", "mode": "afap", "iodepth": 8}),
    ];
    for c in cases {
        let j = tjob(c);
        let a = serde_json::to_string(&replay(&small(), &j, 3)).unwrap();
        let b = serde_json::to_string(&replay(&small(), &j, 3)).unwrap();
        assert_eq!(a, b);
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["job"]["trace"], j.trace.as_str());
        assert!(v.get("trace").is_some());
    }
    // A model's requests follow the seed.
    let j = tjob(serde_json::json!({"trace": "model:web1,count=500", "mode": "afap"}));
    assert_ne!(
        serde_json::to_string(&replay(&small(), &j, 1)).unwrap(),
        serde_json::to_string(&replay(&small(), &j, 2)).unwrap()
    );
}

#[test]
fn time_scale_and_closed_loop_change_the_pace() {
    // 500 requests/s, well below what the small drive sustains, so the trace sets the pace.
    let base = serde_json::json!({"trace": "model:financial1,count=1000,iops=500"});
    let mut fast = base.clone();
    fast["time_scale"] = 0.5.into();
    let t1 = replay(&small(), &tjob(base.clone()), 1)["sim"]["simulated_time_s"]
        .as_f64()
        .unwrap();
    let t2 = replay(&small(), &tjob(fast), 1)["sim"]["simulated_time_s"]
        .as_f64()
        .unwrap();
    assert!(
        t2 < t1 * 0.7,
        "half the time scale, about half the time: {t1} {t2}"
    );
    let mut afap = base;
    afap["mode"] = "afap".into();
    let t3 = replay(&small(), &tjob(afap), 1)["sim"]["simulated_time_s"]
        .as_f64()
        .unwrap();
    assert!(
        t3 < t2,
        "as fast as possible beats the trace's pace: {t3} {t2}"
    );
}

#[test]
fn limits_stop_the_replay() {
    let j = tjob(serde_json::json!({"trace": "model:msnfs,count=5000", "io_count": 100}));
    let v = replay(&small(), &j, 1);
    assert_eq!(v["sim"]["requests"], 100);
    assert_eq!(v["sim"]["stop_reason"], "io_count reached");
    let j = tjob(serde_json::json!({"trace": "model:msnfs,count=5000", "runtime": "1s"}));
    let v = replay(&small(), &j, 1);
    assert_eq!(v["sim"]["stop_reason"], "runtime reached");
    assert!(v["sim"]["requests"].as_u64().unwrap() < 5000);
}

#[test]
fn large_requests_are_split_and_the_queue_limit_holds() {
    // 8 MiB writes at iodepth 1000 on queues of 16 entries: requests wait for queue room.
    let cfg = SsdConfig::resolve("small-tlc", &["interface.queue_depth=16".into()]).unwrap();
    let j = tjob(serde_json::json!({
        "trace": "model:msnfs,count=300,write_size=8MiB,read_size=8MiB,footprint=256MiB",
        "mode": "afap", "iodepth": 1000
    }));
    let v = replay(&cfg, &j, 1);
    assert_eq!(v["sim"]["requests"], 300);
}

#[test]
fn bad_traces_fail_before_the_run() {
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.csv");
    std::fs::write(&p, "0,1,4096,w,0.0\n0,2,4096,w,0.1\n0,x,4096,w,0.2\n").unwrap();
    let j = tjob(serde_json::json!({"trace": p.to_string_lossy(), "format": "spc"}));
    let e = run_replay(&small(), &j, &common::opts(1), &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("bad.csv, line 3") && e.contains("LBA"), "{e}");
    let j = tjob(
        serde_json::json!({"trace": p.to_string_lossy(), "format": "spc", "skip_bad_lines": true}),
    );
    let v = replay(&small(), &j, 1);
    assert_eq!(v["trace"]["skipped_bad_lines"], 1);
    assert_eq!(v["sim"]["requests"], 2);
    let _ = std::fs::remove_dir_all(&dir);
    let e = TraceJob::from_json(r#"{"trace": "x", "colour": 1}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("colour"), "{e}");
    let e = TraceJob::from_json(r#"{"trace": "x", "format": "nope"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("format") && e.contains("msr"), "{e}");
}

#[test]
fn a_timed_replay_past_the_clock_is_refused_before_the_run_naming_an_outlier_first_line() {
    // One line stamped 0 in front of Unix-time lines (as in some published samples).
    let dir = std::env::temp_dir().join(format!("ssdlab-outlier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("outlier.csv");
    std::fs::write(
        &path,
        "0,0,8,0,1\n1538323200,4096,8,1,1\n1538323201,8192,8,0,1\n1538323202,0,8,1,1\n",
    )
    .unwrap();
    let trace = path.to_string_lossy().into_owned();
    let j = tjob(serde_json::json!({"trace": trace, "format": "tencent"}));
    let err = run_replay(&small(), &j, &common::opts(1), &mut |_, _| true)
        .err()
        .expect("refused")
        .to_string();
    for needle in [
        "simulated clock",
        "the first request",
        "outlier",
        "mode = afap",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // As fast as possible, the timestamps do not matter: it runs.
    let j = tjob(serde_json::json!({"trace": trace, "format": "tencent", "mode": "afap"}));
    let v = replay(&small(), &j, 1);
    assert_eq!(v["trace"]["replayed"], 4);
    // Without the outlier line the timed replay runs too.
    std::fs::write(
        &path,
        "1538323200,4096,8,1,1\n1538323201,8192,8,0,1\n1538323202,0,8,1,1\n",
    )
    .unwrap();
    let j = tjob(serde_json::json!({"trace": trace, "format": "tencent"}));
    assert_eq!(replay(&small(), &j, 1)["trace"]["replayed"], 3);
    std::fs::remove_dir_all(&dir).ok();
}
