//! Helpers shared by the whole-run tests (each test file uses some of them).
#![allow(dead_code)]

use ssdlab::device::Device;
use ssdlab::driver::jobs::JobDriver;
use ssdlab::stats::result::RunResult;
use ssdlab::{JobSpec, RunOptions, SsdConfig};

/// Options of a test run: this seed, no per-request records.
pub fn opts(seed: u64) -> RunOptions {
    RunOptions::seeded(seed)
}

/// A result as JSON without its `wall` object, the only part that may differ between runs.
pub fn without_wall(result: &RunResult) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&result.to_json()).unwrap();
    v.as_object_mut().unwrap().remove("wall");
    v
}

/// Run `job` on `cfg` twice with `opts`, assert the two results are the same (but for their
/// wall-clock figures, with `what` in the message), and return the first.
pub fn run_twice_alike(
    cfg: &SsdConfig,
    job: &JobSpec,
    opts: &RunOptions,
    what: &str,
) -> ssdlab::RunOutput {
    let a = ssdlab::run(cfg, job, opts, &mut |_, _| true).unwrap();
    let b = ssdlab::run(cfg, job, opts, &mut |_, _| true).unwrap();
    assert_eq!(without_wall(&a.result), without_wall(&b.result), "{what}");
    a
}

/// Run the job (TOML text) with the data oracle on, after the config's preconditioning if
/// `precondition`: every read is checked against the latest data written; panics at the first
/// mismatch or if no read was checked. Returns the device.
pub fn run_checked(cfg: &SsdConfig, job: &str, seed: u64, precondition: bool) -> Device {
    let spec = JobSpec::from_toml_str(job, "test job").unwrap();
    let job = spec.fit(cfg.logical_bytes()).unwrap();
    let mut dev = Device::new(cfg, seed).unwrap();
    if precondition {
        ssdlab::run::precondition(&mut dev, cfg, seed).unwrap();
    }
    dev.enable_check();
    let mut driver = JobDriver::new(job, &dev, seed).unwrap();
    driver.start(&mut dev);
    assert!(dev.run(&mut driver, 1 << 20, &mut |_, _| true).unwrap());
    driver.finish().unwrap();
    let dc = dev.check().unwrap();
    assert!(dc.reads > 0, "no read was checked");
    if let Some(e) = &dc.first_error {
        panic!("data check failed: {e}");
    }
    dev
}

/// The one-line error a preset with the override `set` is refused with (panics if accepted).
pub fn refusal(preset: &str, set: &str) -> String {
    match SsdConfig::resolve(preset, &[set.to_string()]) {
        Ok(_) => panic!("{preset} with {set} was accepted"),
        Err(e) => e.to_string(),
    }
}
