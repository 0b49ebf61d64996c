//! Workloads: fio-like synthetic jobs, and block-I/O traces (readers, statistics, replay and
//! workload models).

pub mod job;
pub mod trace;

pub use job::JobSpec;
