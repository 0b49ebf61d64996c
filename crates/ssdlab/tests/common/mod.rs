//! Helpers shared by the whole-run tests (each test file uses some of them).
#![allow(dead_code)]

use ssdlab::stats::result::RunResult;
use ssdlab::RunOptions;

/// Options of a test run: this seed, no per-request records.
pub fn opts(seed: u64) -> RunOptions {
    RunOptions {
        seed,
        record_requests: false,
    }
}

/// A result as JSON without its `wall` object, the only part that may differ between runs.
pub fn without_wall(result: &RunResult) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&result.to_json()).unwrap();
    v.as_object_mut().unwrap().remove("wall");
    v
}
