//! A run's result, assembled from what the device and each of its layers report.

use crate::config::SsdConfig;
use crate::device::{Backend, BackendFigures, Device, Status};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::peak_memory_bytes;
use crate::stats::power::PowerInputs;
use crate::stats::result::{
    CacheResult, DeviceResult, DramIfResult, FtlResult, GcResult, InterfaceResult, MappingResult,
    NandOpsResult, OpResult, PcmResult, ReliabilityResult, RunResult, SimInfo, Spread,
    StreamResult, Totals, UnitUtil, Utilisation, Wall, SCHEMA,
};
use std::collections::BTreeMap;

/// The FTL's figures beyond `device`'s: the mapping cache's (cached mapping, `mapping`: the
/// back end's own) and the write streams' (`ftl.streams` > 1); None when neither is on.
fn ftl_result(dev: &Device, mapping: Option<MappingResult>) -> Option<FtlResult> {
    // With `[fdp]` the streams are its handles, reported in `device.fdp`.
    let streams = dev
        .ftl()
        .and_then(|ftl| ftl.stream_stats())
        .filter(|_| dev.config().fdp.is_none())
        .map(|all| {
            all.iter()
                .enumerate()
                .map(|(i, s)| StreamResult {
                    stream: i as u32,
                    host_units_written: s.host_units_written,
                    gc_units_moved: s.gc_units_moved,
                    write_amplification: if s.host_units_written > 0 {
                        (s.host_units_written + s.gc_units_moved) as f64
                            / s.host_units_written as f64
                    } else {
                        0.0
                    },
                })
                .collect()
        });
    (mapping.is_some() || streams.is_some()).then_some(FtlResult { mapping, streams })
}

/// Wear-out and errors, when the config has `[reliability]`.
fn reliability_result(dev: &Device) -> Option<ReliabilityResult> {
    let w = dev.backend().wear()?;
    // Wear is modelled on NAND only.
    let fil = &dev.fil()?.counters;
    let host = dev.host();
    Some(ReliabilityResult {
        pe_limit: w.pe_limit,
        factory_bad_blocks: w.factory_bad_blocks,
        retired_blocks: w.retired_blocks,
        good_blocks: w.good_blocks,
        min_good_blocks: w.min_good_blocks,
        read_only: w.read_only,
        percentage_used: dev.percentage_used()?,
        available_spare_percent: dev.available_spare_percent(),
        reads_retried: fil.reads_retried,
        read_retry_steps: fil.read_retry_steps,
        uncorrectable_reads: fil.uncorrectable_reads,
        failed_reads: host.failed_with(Status::Uncorrectable),
        refused_writes_read_only: host.failed_with(Status::ReadOnly),
        refused_writes_no_space: host.failed_with(Status::NoSpace),
        offline_zones: dev.backend().zoned().and_then(|z| z.offline_zones()),
    })
}

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
    let backend = dev.backend();
    let mut own = backend.figures();
    let mapping = own.mapping.take();
    let firmware_busy = dev.hil().map_or(SimTime::ZERO, |h| h.cpu_busy()) + backend.firmware_busy();
    let events = dev.events();
    let completed = host.completed();
    let cache = dev
        .cache()
        .map(|bm| bm.result(end.max(dev.now()).as_secs_f64()));
    let pcm = backend.pcm().map(|p| p.result(total_time, &util));
    let pages_copied = own.pages_copied;
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
        device: device_result(dev, cfg, own),
        utilisation: utilisation(dev, &util, firmware_busy),
        interface: interface_result(dev),
        ftl: ftl_result(dev, mapping),
        reliability: reliability_result(dev),
        power: cfg.power.as_ref().map(|p| {
            let x = power_inputs(
                dev,
                total_time,
                firmware_busy,
                pages_copied,
                cache.as_ref(),
                pcm.as_ref(),
            );
            crate::stats::power::power(p, &x)
        }),
        cache,
        pcm,
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

/// The device's block of the result: the NAND layers' counts (zeros on a PCM-only device,
/// which has none of these layers), with what the back end counts itself (`own`) in place of
/// the page FTL's where it keeps its own map.
fn device_result(dev: &Device, cfg: &SsdConfig, own: BackendFigures) -> DeviceResult {
    let host = dev.host();
    let f = dev.ftl().map(|f| f.stats.clone()).unwrap_or_default();
    let hil = dev.hil().map(|h| h.counters.clone()).unwrap_or_default();
    let fil = dev.fil().map(|f| f.counters.clone()).unwrap_or_default();
    let unit_per_page = dev.geometry().map_or(1, |g| g.units_per_page) as f64;
    let host_pages_written = own
        .host_pages_written
        .unwrap_or_else(|| (f.host_units_written as f64 / unit_per_page).ceil() as u64);
    // The power-loss model's map checkpoints are programs of the drive too (0 without it).
    let wa = own.write_amplification.unwrap_or_else(|| {
        if f.host_units_written > 0 {
            (f.host_units_written + f.gc_units_moved + f.checkpoint_units_written) as f64
                / f.host_units_written as f64
        } else {
            0.0
        }
    });
    DeviceResult {
        logical_bytes: cfg.logical_bytes(),
        map_unit_bytes: cfg.map_unit_bytes(),
        host_pages_read: (hil.host_units_read as f64 / unit_per_page).ceil() as u64,
        host_pages_written,
        nand_pages_read: fil.nand_pages_read,
        nand_pages_written: fil.nand_pages_written,
        write_amplification: wa,
        gc_runs: f.gc_runs,
        gc_units_moved: f.gc_units_moved,
        erases: f.erases + own.erases,
        erase_count: own.erase_count.unwrap_or_else(|| {
            Spread::of(
                dev.ftl()
                    .into_iter()
                    .flat_map(|f| f.blocks().iter().map(|b| b.erase_count as f64)),
            )
        }),
        wear_level_migrations: f.wl_migrations,
        forced_erases: f.forced_erases,
        trimmed_units: f.trimmed_units,
        unmapped_reads: hil.unmapped_reads,
        buffer_reads: hil.buffer_reads,
        multiplane_ops: fil.multiplane_ops,
        page_register_hits: fil.page_register_hits,
        read_ahead_pages: cfg
            .controller
            .read_ahead
            .filter(|b| b.0 > 0)
            .map(|_| fil.read_ahead_pages),
        nand_ops: cfg.nand.names_nand_ops().then_some(NandOpsResult {
            single_plane_ops: fil.single_plane_ops(),
            multi_plane_ops: fil.multi_plane_ops,
            partners_refused: fil.partners_refused,
            program_suspensions: fil.program_suspensions,
            erase_suspensions: fil.erase_suspensions,
        }),
        merges: own.merges,
        gc: (cfg.ftl.gc.background || cfg.ftl.gc.copyback).then_some(GcResult {
            background_runs: f.background_gc_runs,
            copyback_pages: fil.copyback_pages,
        }),
        steady_state: dev.steady_state_result(),
        zones: own.zones.map(|mut z| {
            for st in Status::ALL {
                let n = host.failed_with(st);
                if n > 0 {
                    z.errors.insert(st.name(), n);
                }
            }
            z
        }),
        fdp: dev.fdp_result(),
    }
}

/// How busy the channels, dies, link and processors were: `util` turns busy time into a
/// fraction of the run's simulated time.
fn utilisation(dev: &Device, util: &dyn Fn(SimTime) -> f64, firmware_busy: SimTime) -> Utilisation {
    let (link_up, link_down) = dev.interface().link_busy();
    let cores = dev.host_cpu();
    Utilisation {
        channel: UnitUtil::of(
            dev.fil()
                .map_or(Vec::new(), |f| f.channel_busy().map(util).collect()),
        ),
        die: UnitUtil::of(
            dev.fil()
                .map_or(Vec::new(), |f| f.die_busy().map(util).collect()),
        ),
        link_up: util(link_up),
        link_down: util(link_down),
        host_cpu: cores.busy().map(util).sum::<f64>() / cores.cores() as f64,
        controller_cpu: util(firmware_busy),
        host_cpu_busy_s: cores.busy().map(|b| b.as_secs_f64()).sum(),
        controller_cpu_busy_s: firmware_busy.as_secs_f64(),
    }
}

/// What the power model needs of a NAND device's run, over `secs` of simulated time, with the
/// energy its cache buffer and PCM report in their own blocks.
fn power_inputs(
    dev: &Device,
    secs: f64,
    firmware_busy: SimTime,
    backend_copies: u64,
    cache: Option<&CacheResult>,
    pcm: Option<&PcmResult>,
) -> PowerInputs {
    let Backend::Nand(nand) = dev.backend() else {
        // A PCM-only device: no NAND dies; the controller's idle and core power, its data
        // path over the bytes the PCM moved, the cache buffer's DRAM if it has one, and the
        // PCM's own energy.
        return PowerInputs {
            seconds: secs,
            controller_busy_s: firmware_busy.as_secs_f64(),
            bytes_read: pcm.map_or(0, |r| r.bytes_read),
            bytes_written: pcm.map_or(0, |r| r.bytes_written),
            cache_mj: cache.map(|c| c.energy.dynamic_mj + c.energy.leakage_mj),
            pcm_mj: pcm.and_then(|r| {
                r.energy
                    .read_uj
                    .zip(r.energy.write_uj)
                    .map(|(read, write)| (read + write) * 1e-3)
            }),
            ..PowerInputs::default()
        };
    };
    let (fil, geo) = (&nand.fil.counters, &nand.geo);
    // Units the page FTL's GC moved (a scheme with its own map counts its copies in
    // `backend_copies`).
    let gc_units_moved = dev.ftl().map_or(0, |f| f.stats.gc_units_moved);
    PowerInputs {
        seconds: secs,
        dies: nand.fil.die_busy().count() as u64,
        array_read_s: fil.array_read_time.as_secs_f64(),
        array_program_s: fil.array_program_time.as_secs_f64(),
        array_erase_s: fil.array_erase_time.as_secs_f64(),
        channel_busy_s: nand.fil.channel_busy().map(|b| b.as_secs_f64()).sum(),
        controller_busy_s: firmware_busy.as_secs_f64(),
        // Saturating: a count of units times their size cannot wrap into a small figure.
        bytes_read: (nand
            .hil
            .counters
            .host_units_read
            .saturating_add(gc_units_moved))
        .saturating_mul(geo.unit_bytes)
        .saturating_add(backend_copies.saturating_mul(geo.page_bytes)),
        bytes_written: fil.nand_pages_written.saturating_mul(geo.page_bytes),
        cache_mj: cache.map(|c| c.energy.dynamic_mj + c.energy.leakage_mj),
        // Only when both figures exist: a missing one (null in the pcm block) is unknown.
        pcm_mj: pcm.and_then(|r| Some((r.energy.read_uj? + r.energy.write_uj?) * 1e-3)),
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
