//! ssdlab: a deterministic simulator of solid-state storage systems.
//!
//! The request path: a workload (`workload`) issues requests from the host (`host`), which
//! crosses the interface (`iface`) to the controller (`ctrl`: HIL then FIL), whose FTL (`ftl`)
//! maps them onto the media (`media`). `system` holds all of it and runs the event loop on the
//! engine (`sim`); `stats` gathers the result; `run` ties a run together.

pub mod config;
pub mod ctrl;
pub mod error;
pub mod ftl;
pub mod host;
pub mod iface;
pub mod media;
pub mod nvme;
pub mod run;
pub mod sim;
pub mod stats;
pub mod system;
pub mod workload;

pub use config::SsdConfig;
pub use error::{Error, Result};
pub use run::{bench, run, run_replay, RunOptions, RunOutput};
pub use workload::JobSpec;
