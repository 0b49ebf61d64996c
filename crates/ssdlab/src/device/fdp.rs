//! Flexible Data Placement's figures (`[fdp]`, docs/fdp.md): what the run result's
//! `device.fdp` and the register-level controller's FDP Statistics and Reclaim Unit Handle
//! Usage log pages report, from the FTL's per-stream counters (handle h is stream h) and its
//! reclaim-unit bookkeeping.

use super::Device;
use crate::stats::result::{FdpHandleResult, FdpResult};

impl Device {
    /// Flexible Data Placement's figures, with `[fdp]`: its handles are the FTL's write streams.
    pub fn fdp_result(&self) -> Option<FdpResult> {
        let dev = self;
        let f = dev.config().fdp.as_ref()?;
        let ftl = dev.backend().page_ftl()?;
        let units = ftl.fdp_units()?;
        let streams = ftl.stream_stats()?;
        let unit = ftl.geo.unit_bytes;
        let waf = |host: u64, media: u64| {
            if host > 0 {
                media as f64 / host as f64
            } else {
                0.0
            }
        };
        let per_handle: Vec<FdpHandleResult> = streams
            .iter()
            .zip(&units.stats)
            .enumerate()
            .map(|(i, (s, ru))| {
                let host = s.host_units_written.saturating_mul(unit);
                let media = (s.host_units_written + s.gc_units_moved).saturating_mul(unit);
                FdpHandleResult {
                    placement_id: i as u32,
                    host_bytes_written: host,
                    media_bytes_written: media,
                    write_amplification: waf(host, media),
                    ru_fills: ru.ru_fills,
                }
            })
            .collect();
        let host: u64 = per_handle.iter().map(|h| h.host_bytes_written).sum();
        let media: u64 = per_handle.iter().map(|h| h.media_bytes_written).sum();
        let cfg = dev.config();
        Some(FdpResult {
            handles: f.handles,
            reclaim_groups: f.reclaim_groups,
            ru_bytes: f.ru_bytes(&cfg.nand),
            ruh_type: f.ruh_type.name(),
            host_bytes_written: host,
            media_bytes_written: media,
            media_bytes_erased: ftl
                .stats
                .erases
                .saturating_mul(unit * ftl.geo.units_per_block() as u64),
            write_amplification: waf(host, media),
            ru_fills: per_handle.iter().map(|h| h.ru_fills).sum(),
            per_handle,
        })
    }
}
