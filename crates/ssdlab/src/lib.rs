//! ssdlab: a deterministic simulator of solid-state storage systems.
//!
//! A [`device::Device`] is the host stack (`host`), a host interface (`iface`), the controller
//! (`ctrl`: HIL, cache buffer, FIL), the FTL (`ftl`) and the media (`media`), on the engine
//! (`sim`), with no workload. Drivers (`driver`) submit requests to it through a small boundary:
//! fio-like jobs and trace replays (`workload` holds their specs, generators and trace readers)
//! and the register-level NVMe controller (`driver::nvme_regs`). `stats` gathers the result; `run` ties a
//! run together.

pub mod config;
pub mod ctrl;
pub mod device;
pub mod driver;
pub mod error;
pub mod event;
pub mod ftl;
pub mod host;
pub mod iface;
pub mod media;
pub mod paging;
pub mod request;
pub mod run;
pub mod serve;
pub mod sim;
pub mod stats;
pub mod workload;

pub use config::SsdConfig;
pub use device::{Completion, Device, Driver, Request};
pub use error::{
    ConfigError, DeviceError, Error, Invalid, JobError, Layout, PagingError, Problem, Result,
    ServeError, TraceError,
};
pub use run::{bench, bench_with, run, run_flows, run_replay, run_requests, RunOptions, RunOutput};
pub use workload::JobSpec;
