//! Workloads: fio-like synthetic jobs.

pub mod job;

pub use job::{JobSpec, Op};
