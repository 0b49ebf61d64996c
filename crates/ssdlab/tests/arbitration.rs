//! NVMe submission-queue arbitration seen from whole runs: flows of different priority classes
//! sharing a controller that holds few commands (`interface.controller_slots`), under round
//! robin and under weighted round robin with urgent priority class (`iface::arbiter`).

mod common;

use ssdlab::{run_flows, JobSpec, SsdConfig};

/// small-tlc with 8 SQs and a controller of 16 command slots: two flows of 64 reads in flight
/// each wait mostly for a slot, so the arbiter decides who is served.
fn device(arbitration: &str, more: &[&str]) -> SsdConfig {
    let mut ov: Vec<String> = vec![
        "interface.io_queues=8".into(),
        "interface.controller_slots=16".into(),
        format!("interface.arbitration=\"{arbitration}\""),
    ];
    ov.extend(more.iter().map(|s| s.to_string()));
    SsdConfig::resolve("small-tlc", &ov).unwrap()
}

fn flow(name: &str, priority: &str) -> JobSpec {
    JobSpec::from_json(&format!(
        r#"{{"name":"{name}","rw":"randread","bs":"4KiB","iodepth":64,"runtime":"20ms","ramp":"2ms","priority":"{priority}"}}"#
    ))
    .unwrap()
}

fn result(cfg: &SsdConfig, flows: &[JobSpec], seed: u64) -> serde_json::Value {
    let out = run_flows(cfg, flows, &common::opts(seed), &mut |_, _| true).unwrap();
    common::without_wall(&out.result)
}

/// Each flow's mean read latency in µs, in the order given.
fn means(r: &serde_json::Value) -> Vec<f64> {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["ops"]["read"]["latency_us"]["mean"].as_f64().unwrap())
        .collect()
}

/// A high and a low flow on a saturated controller: under weighted round robin with weights
/// of 4, 2 and 1 the high flow gets four slots for each of the low flow's, so at the same queue
/// depth its requests take about a quarter as long; under round robin both take alike.
#[test]
fn a_high_flow_waits_less_than_a_low_one_under_weighted_round_robin_only() {
    let flows = [flow("hi", "high"), flow("lo", "low")];
    let wrr = means(&result(&device("weighted-round-robin", &[]), &flows, 1));
    // Both flows always have reads waiting, so each completes at the rate it gets slots, and
    // at the same depth its latency is the inverse (Little's law): low / high = 4 / 1.
    let ratio = wrr[1] / wrr[0];
    assert!(
        (3.5..4.5).contains(&ratio),
        "WRR: high {} µs, low {} µs",
        wrr[0],
        wrr[1]
    );
    let rr = means(&result(&device("round-robin", &[]), &flows, 1));
    let ratio = rr[1] / rr[0];
    assert!(
        (0.9..1.1).contains(&ratio),
        "RR: {} µs and {} µs",
        rr[0],
        rr[1]
    );
}

/// An urgent flow is served before every weighted class (strict priority): with fewer reads in
/// flight than the controller has slots it never waits for one, and its reads take about what
/// they take alone; the high flow still waits less than the low one.
#[test]
fn an_urgent_flow_beats_high_and_low() {
    let cfg = device("weighted-round-robin", &[]);
    let mut urgent = flow("u", "urgent");
    urgent.iodepth = 8;
    let flows = [urgent.clone(), flow("hi", "high"), flow("lo", "low")];
    let m = means(&result(&cfg, &flows, 1));
    assert!(m[0] < m[1] && m[1] < m[2], "urgent, high, low: {m:?}");
    let alone = result(&cfg, &[urgent], 1)["ops"]["read"]["latency_us"]["mean"]
        .as_f64()
        .unwrap();
    assert!(
        m[0] < 1.5 * alone,
        "urgent {} µs shared, {alone} µs alone",
        m[0]
    );
    // Strict priority starves the rest: an urgent flow that always has entries waiting takes
    // every slot, and the high and low flows complete nothing.
    let flows = [flow("u", "urgent"), flow("hi", "high"), flow("lo", "low")];
    let r = result(&cfg, &flows, 1);
    for f in &r["flows"].as_array().unwrap()[1..] {
        assert_eq!(f["total"]["count"], 0, "{f}");
    }
}

/// The weights are the config's: equal weights serve high and low alike.
#[test]
fn equal_weights_serve_the_classes_alike() {
    let cfg = device(
        "weighted-round-robin",
        &["interface.arbitration_weights={high=2,medium=2,low=2}"],
    );
    let m = means(&result(&cfg, &[flow("hi", "high"), flow("lo", "low")], 1));
    let ratio = m[1] / m[0];
    assert!((0.9..1.1).contains(&ratio), "{m:?}");
}

#[test]
fn the_same_seed_gives_the_same_result() {
    let cfg = device("weighted-round-robin", &[]);
    let flows = [flow("u", "urgent"), flow("hi", "high"), flow("lo", "low")];
    let a = result(&cfg, &flows, 3).to_string();
    assert_eq!(a, result(&cfg, &flows, 3).to_string());
    assert_ne!(a, result(&cfg, &flows, 4).to_string());
}

/// Bad input: one clear error naming the field, the value and what was expected.
#[test]
fn bad_arbitration_settings_are_refused_by_name() {
    let resolve = |ov: &[&str]| {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        SsdConfig::resolve("small-tlc", &ov)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let wrr = "interface.arbitration=\"weighted-round-robin\"";
    for (ov, field, words) in [
        (
            vec![
                wrr,
                "interface.controller_slots=8",
                "interface.arbitration_weights.high=0",
            ],
            "interface.arbitration_weights.high",
            "got 0, expected 1 to 256",
        ),
        (
            vec![
                wrr,
                "interface.controller_slots=8",
                "interface.arbitration_weights.low=257",
            ],
            "interface.arbitration_weights.low",
            "got 257, expected 1 to 256",
        ),
        (
            vec![wrr],
            "interface.arbitration",
            "without interface.controller_slots",
        ),
        (
            vec!["interface.controller_slots=0"],
            "interface.controller_slots",
            "got 0, expected at least 1",
        ),
        (
            vec!["interface.arbitration=\"fair\""],
            "interface.arbitration",
            "fair",
        ),
    ] {
        let e = resolve(&ov);
        assert!(e.contains(field) && e.contains(words), "{ov:?}: {e}");
    }
    let e = JobSpec::from_json(r#"{"rw":"randread","priority":"highest"}"#)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("priority") && e.contains("highest"), "{e}");
}

/// A queue has one class: two flows of different classes on one SQ are refused, naming both.
#[test]
fn two_classes_on_one_queue_are_refused() {
    let cfg = device("weighted-round-robin", &["interface.io_queues=1"]);
    let e = run_flows(
        &cfg,
        &[flow("hi", "high"), flow("lo", "low")],
        &common::opts(1),
        &mut |_, _| true,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("flow `lo`") && e.contains("field `priority`") && e.contains("`hi`"),
        "{e}"
    );
    assert!(e.contains("interface.io_queues"), "{e}");
}
