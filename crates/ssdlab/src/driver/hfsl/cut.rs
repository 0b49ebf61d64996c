//! A power cut of HFSL and the restart after it: the raw commands in flight torn, the DRAM's
//! map lost, the map rebuilt from the PCM's map area and the media, and what reads back wrong.

use super::map::{HfslMap, RawOp, Recovered};
use super::persist::Lost;
use super::runner::Runner;
use super::{hardware, HostSource};
use crate::config::HfslConfig;
use crate::device::Device;
use crate::error::{says, Error, Invalid, Result};
use crate::sim::SimTime;

/// A power cut and the restart after it (issue 11 point 6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PowerCut {
    /// Device events handled before the power failed, and the simulated time.
    pub event: u64,
    pub at: SimTime,
    /// Host requests acknowledged before it, and whether one was under way.
    pub requests_acknowledged: u64,
    pub request_cut: bool,
    /// Raw commands in the device and in HFSL's channel queues at the cut.
    pub commands_in_flight: u64,
    pub commands_queued: u64,
    /// The restart: reading the map area back from the PCM (and any erase a die needed).
    pub recovery: SimTime,
    pub map_bytes_read: u64,
    pub recovery_erases: u64,
    pub recovered: Recovered,
    /// What reads back wrong through the recovered map (not counted when the restart was
    /// itself cut).
    pub lost: Lost,
    /// A power cut armed for the restart failed it before it finished: the power is off
    /// again, and the next restart starts over from what the media hold.
    pub restart_cut: bool,
}

impl PowerCut {
    /// This restart's figures with the cut of `cut` (its event, time and what was in flight).
    pub(super) fn under(self, cut: PowerCut) -> PowerCut {
        PowerCut {
            recovery: self.recovery,
            map_bytes_read: self.map_bytes_read,
            recovery_erases: self.recovery_erases,
            recovered: self.recovered,
            lost: self.lost,
            restart_cut: self.restart_cut,
            ..cut
        }
    }
}

impl PowerCut {
    /// As a run's result shows it.
    pub fn result(&self) -> crate::stats::result::PowerCutResult {
        crate::stats::result::PowerCutResult {
            event: self.event,
            at_us: self.at.as_us_f64(),
            requests_acknowledged: self.requests_acknowledged,
            request_cut: self.request_cut,
            commands_in_flight: self.commands_in_flight,
            commands_queued: self.commands_queued,
            recovery_us: self.recovery.as_us_f64(),
            map_bytes_read: self.map_bytes_read,
            recovery_erases: self.recovery_erases,
            entries_recovered: self.recovered.mapped,
            entries_dropped: self.recovered.dropped,
            lost_pages: self.lost.pages,
            lost_sub_pages: self.lost.sub_pages,
            cut_write_old: self.lost.cut_write_old,
            cut_write_new: self.lost.cut_write_new,
            cut_write_torn: self.lost.cut_write_torn,
            restart_cut: self.restart_cut,
        }
    }
}

/// A cut before the restart: what it interrupted, and the device as it was.
pub(super) struct Cut {
    pub(super) report: PowerCut,
    pub(super) before: Device,
}

impl<S: HostSource> Runner<S> {
    /// The power fails now: the raw commands in flight leave their places torn, HFSL's DRAM
    /// (its map, queues, the request under way) is lost, and the device power-cycles.
    pub(super) fn cut(&mut self, dev: &mut Device) -> Result<Cut> {
        let Some(media) = self.media.as_mut() else {
            return Err(Error::bad_job(Invalid::got(
                "",
                "track_data",
                false,
                "true: a power cut needs the data model (open HFSL with track_data, or set \
                 hfsl.power_cut_event in the config)",
            )));
        };
        let event = dev.events();
        // Each entry of a map write in flight is old or new: a fixed mix of the event and the
        // LPN, so a run is the same each time.
        let coin = |lpn: u32| {
            let mut z = event ^ ((lpn as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
            z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 29)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z >> 63) == 1
        };
        for (_, r) in self.in_flight.drain(..) {
            media.cut(&r, &self.map, &coin);
        }
        let report = PowerCut {
            event,
            at: dev.now(),
            requests_acknowledged: self.report.requests,
            request_cut: self.phase != 0,
            commands_queued: self.queued as u64,
            ..PowerCut::default()
        };
        for q in &mut self.queues {
            q.clear();
        }
        self.queued = 0;
        self.left = 0;
        self.phase = 0;
        self.ticking = false;
        self.waiting = false;
        self.pending = None;
        let (before, in_flight) = dev.power_cycle()?;
        Ok(Cut {
            report: PowerCut {
                commands_in_flight: in_flight,
                ..report
            },
            before,
        })
    }

    /// The restart after `cut` (§2.6.1: "When fusion storage system boots, HFSL reads the
    /// metadata out of the fixed physical address of PCM"): read the map area, rebuild the
    /// map from it and the device's hardware information, run what the dies need, and count
    /// what reads back wrong. The recovery time is the simulated time of those commands (the
    /// host CPU's time to rebuild the tables is not modelled). With `cut_at`, the power fails
    /// again once the device has handled that many events, if the restart gets there: then
    /// the report says so (`restart_cut`) and the new cut is returned beside it.
    pub(super) fn restart(
        &mut self,
        dev: &mut Device,
        hfsl: &HfslConfig,
        cut: PowerCut,
        cut_at: Option<u64>,
    ) -> Result<(PowerCut, Option<PowerCut>)> {
        let media = self.media.as_ref().expect("a cut had the data model");
        let hw = hardware(dev.config())?;
        let raw = dev.backend().raw().ok_or_else(|| {
            Error::bad_device(Invalid::unnamed(
                "hfsl",
                says("a fusion device without its raw firmware"),
            ))
        })?;
        let next_page: Vec<u32> = (0..hw.nand_blocks).map(|b| raw.next_page(b)).collect();
        let (map, recovered) = HfslMap::recover(
            hfsl,
            &hw,
            &media.persisted,
            &next_page,
            raw.erase_counts(),
            media.pcm.clone(),
            media.nand.clone(),
            self.map.counters.clone(),
        )?;
        self.map = map;
        let start = dev.now();
        let (base, bytes) = (self.map.map_base(), self.map.map_bytes());
        let chunk = dev.max_cmd_bytes().max(self.shape.page_bytes);
        let reads: Vec<RawOp> = (0..bytes.div_ceil(chunk))
            .map(|k| RawOp::PcmRead {
                addr: base + k * chunk,
                len: chunk.min(bytes - k * chunk),
            })
            .collect();
        // Then what the dies need, step by step.
        let mut finished = true;
        for step in std::iter::once(&reads[..]).chain(recovered.steps.in_order()) {
            finished = self.run_raw_until(dev, step, cut_at)?;
            if !finished {
                break;
            }
        }
        let report = PowerCut {
            recovery: dev.now() - start,
            map_bytes_read: bytes,
            recovery_erases: recovered.steps.erases(),
            recovered,
            ..cut
        };
        if !finished {
            let again = self.cut(dev)?.report;
            return Ok((
                PowerCut {
                    restart_cut: true,
                    ..report
                },
                Some(again),
            ));
        }
        let media = self.media.as_mut().expect("a cut had the data model");
        let lost = media.lost(&self.map);
        Ok((PowerCut { lost, ..report }, None))
    }
}
