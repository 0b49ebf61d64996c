//! A run's result, assembled from what the device and each of its layers report.

use crate::config::SsdConfig;
use crate::device::{BackendFigures, Device, Status};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::peak_memory_bytes;
use crate::stats::power::PowerInputs;
use crate::stats::result::{
    DeviceResult, DramIfResult, InterfaceResult, OpResult, ReliabilityResult, RunResult, SimInfo,
    Totals, UnitUtil, Utilisation, Wall, SCHEMA,
};
use std::collections::BTreeMap;

pub(super) fn bandwidth(bytes: u64, secs: f64) -> (f64, f64) {
    if secs <= 0.0 {
        return (0.0, 0.0);
    }
    (
        bytes as f64 / secs / (1024.0 * 1024.0),
        bytes as f64 / secs / 1e6,
    )
}

/// `n` per second over `secs` (0 over no time).
pub(super) fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `n` per `of` (0 when `of` is 0).
pub(super) fn per(n: u64, of: u64) -> f64 {
    if of > 0 {
        n as f64 / of as f64
    } else {
        0.0
    }
}

/// One op's figures from its latencies, over a window of `secs`.
/// Each operation that ran, with its figures over `secs` (from `latency`, an operation's
/// latencies), and the requests and bytes of them all: the `ops` of a run's result or a flow's.
pub(super) fn ops_over<'a>(
    latency: impl Fn(Op) -> &'a crate::stats::LatencyStats,
    secs: f64,
) -> (BTreeMap<&'static str, OpResult>, u64, u64) {
    let mut ops = BTreeMap::new();
    let (mut count, mut bytes) = (0, 0);
    for op in Op::ALL {
        let l = latency(op);
        if l.count == 0 {
            continue;
        }
        count += l.count;
        bytes += l.bytes;
        ops.insert(op.name(), op_result(l, secs));
    }
    (ops, count, bytes)
}

/// A run's (or a flow's) totals: `count` requests of `bytes` over `secs`.
pub(super) fn totals(count: u64, bytes: u64, secs: f64) -> Totals {
    let (mib, mb) = bandwidth(bytes, secs);
    Totals {
        count,
        bytes,
        iops: per_s(count, secs),
        bandwidth_mib_s: mib,
        bandwidth_mb_s: mb,
    }
}

pub(super) fn op_result(l: &crate::stats::LatencyStats, secs: f64) -> OpResult {
    let (mib, mb) = bandwidth(l.bytes, secs);
    OpResult {
        count: l.count,
        bytes: l.bytes,
        iops: per_s(l.count, secs),
        bandwidth_mib_s: mib,
        bandwidth_mb_s: mb,
        latency_us: l.summary(),
    }
}

/// The result of a run on `dev`, from its layers' figures.
pub fn build_result(
    dev: &Device,
    cfg: &SsdConfig,
    job: serde_json::Value,
    seed: u64,
    stop: &str,
    wall_s: f64,
    pre_s: f64,
) -> RunResult {
    let host = dev.host();
    let end = host.last_completion();
    let start = host.measure_from().min(end);
    let window = (end - start).as_secs_f64();
    let (ops, count, bytes) = ops_over(|op| host.latency(op), window);
    // GC may run on after the last completion: utilisation is over all simulated time.
    let total_time = end.max(dev.now()).as_secs_f64().max(1e-18);
    let util = |busy: SimTime| (busy.as_secs_f64() / total_time).min(1.0);
    let cache = dev
        .cache()
        .map(|bm| bm.result(end.max(dev.now()).as_secs_f64()));
    // The back end's blocks, with what the host, the interface and the cache buffer report.
    let own = dev.backend().figures(cfg, total_time, &util);
    let events = dev.events();
    let completed = host.completed();
    RunResult {
        schema: SCHEMA,
        ssdlab_version: env!("CARGO_PKG_VERSION"),
        config_name: cfg.meta.name.clone(),
        config_hash: cfg.hash(),
        seed,
        job,
        trace: None,
        requests: None,
        latency_depth: None,
        flows: None,
        samples: None,
        power_loss: None,
        sim: SimInfo {
            simulated_time_s: end.as_secs_f64(),
            measured_time_s: window,
            requests: completed,
            events,
            stop_reason: stop.to_string(),
        },
        ops,
        total: totals(count, bytes, window),
        utilisation: utilisation(dev, &util, &own),
        interface: interface_result(dev),
        reliability: own.reliability.map(|r| ReliabilityResult {
            failed_reads: host.failed_with(Status::Uncorrectable),
            refused_writes_read_only: host.failed_with(Status::ReadOnly),
            refused_writes_no_space: host.failed_with(Status::NoSpace),
            ..r
        }),
        power: cfg.power.as_ref().map(|p| {
            let x = PowerInputs {
                cache_mj: cache
                    .as_ref()
                    .map(|c| c.energy.dynamic_mj + c.energy.leakage_mj),
                ..own.power
            };
            crate::stats::power::power(p, &x)
        }),
        device: DeviceResult {
            zones: own.device.zones.map(|mut z| {
                for st in Status::ALL {
                    let n = host.failed_with(st);
                    if n > 0 {
                        z.errors.insert(st.name(), n);
                    }
                }
                z
            }),
            fdp: dev.fdp_result(),
            ..own.device
        },
        ftl: own.ftl,
        cache,
        pcm: own.pcm,
        hfsl: None,
        wall: Wall {
            seconds: wall_s,
            precondition_seconds: pre_s,
            requests_per_s: per_s(completed, wall_s),
            events_per_s: per_s(events, wall_s),
            memory: dev.memory(),
            peak_memory_bytes: peak_memory_bytes(),
            reply_lag_us: None,
        },
    }
}

/// How busy the channels, dies, link and processors were: `util` turns busy time into a
/// fraction of the run's simulated time; the channels', dies' and firmware's busy times are
/// the back end's (`own`).
fn utilisation(dev: &Device, util: &dyn Fn(SimTime) -> f64, own: &BackendFigures) -> Utilisation {
    let (link_up, link_down) = dev.interface().link_busy();
    let cores = dev.host_cpu();
    Utilisation {
        channel: UnitUtil::of(own.channel_busy.iter().map(|&b| util(b)).collect()),
        die: UnitUtil::of(own.die_busy.iter().map(|&b| util(b)).collect()),
        link_up: util(link_up),
        link_down: util(link_down),
        host_cpu: cores.busy().map(util).sum::<f64>() / cores.cores() as f64,
        controller_cpu: util(own.firmware_busy),
        host_cpu_busy_s: cores.busy().map(|b| b.as_secs_f64()).sum(),
        controller_cpu_busy_s: own.firmware_busy.as_secs_f64(),
    }
}

fn interface_result(dev: &Device) -> InterfaceResult {
    let link = dev.interface();
    InterfaceResult {
        kind: link.kind().name(),
        link: link.link_name().to_string(),
        device_queue_depth: link.device_queue_depth(),
        dram: link.dramif().map(|d| DramIfResult {
            stats: d.stats.clone(),
            interface_bandwidth_mb_s: {
                // Data movement: the copy phases without the DMA set-ups (protocol work).
                let moving_ns = d.stats.copy_phase_ns - d.stats.dma_setup_ns;
                if moving_ns > 0.0 {
                    d.stats.data_bytes as f64 / (moving_ns * 1e-9) / 1e6
                } else {
                    0.0
                }
            },
        }),
    }
}
