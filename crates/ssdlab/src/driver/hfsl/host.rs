//! `HfslHost` (the Python `ssdlab.Hfsl`): HFSL over a fusion device, one host request per call.

use super::map::{self, HfslMap};
use super::runner::Runner;
use super::{
    hardware, run_to_event, usable_pages, HfslReport, HostDone, HostIo, HostSource, PowerCut,
};
use crate::config::{HfslConfig, SsdConfig};
use crate::device::{Device, HardwareInfo};
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use crate::sim::SimTime;

/// The source of an [`HfslHost`]: the one request it was handed.
pub(super) struct OneRequest(Option<(SimTime, HostIo)>);

impl HostSource for OneRequest {
    fn next_io(&mut self, _now: SimTime) -> Result<Option<(SimTime, HostIo)>> {
        Ok(self.0.take())
    }
}

/// HFSL over a fusion device, driven one host request at a time by its caller (the Python
/// `ssdlab.Hfsl`): each request runs to completion before the call returns.
pub struct HfslHost {
    dev: Device,
    runner: Runner<OneRequest>,
    hw: HardwareInfo,
    hfsl: HfslConfig,
    /// An armed power cut: the power fails once the device has handled this many events.
    cut_at: Option<u64>,
    /// The power is off after this cut, until [`HfslHost::restart`].
    off: Option<PowerCut>,
}

impl HfslHost {
    /// HFSL on the fusion device `cfg` describes, with `cfg`'s `[hfsl]` (or its defaults), over
    /// the first `logical_bytes` of its logical space (whole pages). `track_data` keeps a model
    /// of the data on the media (which power cuts need, and [`HfslHost::read_back`] reads).
    pub fn new(
        cfg: &SsdConfig,
        seed: u64,
        logical_bytes: u64,
        track_data: bool,
    ) -> Result<HfslHost> {
        let hw = hardware(cfg)?;
        let hfsl = cfg.hfsl.clone().unwrap_or_default();
        let usable = usable_pages(&hfsl, &hw);
        if usable == 0 {
            // Every block of a die is GC's reserve: no logical size could fit (the message
            // blamed logical_bytes with the range "1 to 0").
            let die_blocks = hw.nand_blocks / (hw.nand_channels * hw.nand_chips_per_channel).max(1);
            return Err(Error::bad_config(Invalid::got(
                &cfg.meta.name,
                "hfsl.gc_free_blocks",
                hfsl.gc_free_blocks,
                format!(
                    "fewer spare blocks, or hfsl.gc = false (with one open block per write stream, \
                     GC's reserve takes every block of a die, {die_blocks} blocks each, none left for data)"
                ),
            )));
        }
        if !logical_bytes.is_multiple_of(hw.nand_page_bytes) {
            // It was rounded up to whole pages without a word.
            return Err(Error::bad_job(Invalid::unnamed(
                "logical_bytes",
                got(
                    logical_bytes,
                    format!(
                        "a whole number of HFSL's logical pages ({} bytes each, the NAND page)",
                        hw.nand_page_bytes
                    ),
                ),
            )));
        }
        let pages = logical_bytes / hw.nand_page_bytes;
        if pages == 0 || pages > usable {
            return Err(Error::bad_job(Invalid::unnamed(
                "logical_bytes",
                got(
                    logical_bytes,
                    format!(
                        "1 to {} (HFSL's NAND pages of {} bytes, less GC's spare blocks)",
                        usable * hw.nand_page_bytes,
                        hw.nand_page_bytes
                    ),
                ),
            )));
        }
        let map = HfslMap::new(&hfsl, &hw, pages as u32)?;
        let mut runner = Runner::new(map, &hfsl, &hw, OneRequest(None));
        if track_data {
            runner.track_data()?;
        }
        Ok(HfslHost {
            dev: Device::new(cfg, seed)?,
            runner,
            hw,
            hfsl,
            cut_at: None,
            off: None,
        })
    }

    pub(super) fn power_is_on(&self) -> Result<()> {
        match &self.off {
            Some(c) => Err(Error::bad_job(Invalid::unnamed(
                "hfsl",
                says(format!(
                    "the power is off (cut after device event {}): restart() first",
                    c.event
                )),
            ))),
            None => Ok(()),
        }
    }

    pub(super) fn tracking(&self) -> Result<()> {
        if self.runner.media.is_none() {
            return Err(Error::bad_job(Invalid::got(
                "",
                "track_data",
                false,
                "true: power cuts and read-back need the data model",
            )));
        }
        Ok(())
    }

    /// Device events handled so far (a power cut is armed at an event count).
    pub fn events(&self) -> u64 {
        self.dev.events()
    }

    /// Arm a power cut: the power fails once the device has handled `event` events in all,
    /// in whichever request gets there (later than now). Armed while the power is off, it
    /// counts the events of the restarted device (from 0) and may cut the restart itself.
    pub fn arm_power_cut(&mut self, event: u64) -> Result<()> {
        self.tracking()?;
        let now = self.dev.events();
        if event <= now {
            return Err(Error::bad_job(Invalid::unnamed(
                "event",
                got(
                    event,
                    format!("more than the {now} events the device has handled"),
                ),
            )));
        }
        self.cut_at = Some(event);
        Ok(())
    }

    /// Cut the power now, between requests (what HFSL keeps in DRAM is lost).
    pub fn cut_power(&mut self) -> Result<()> {
        self.tracking()?;
        self.power_is_on()?;
        self.cut_at = None;
        self.off = Some(self.runner.cut(&mut self.dev)?.report);
        Ok(())
    }

    /// The power comes back: HFSL recovers its map from the PCM. Returns the cut and what the
    /// restart took and found. If a cut armed while the power was off fires during the
    /// restart, the report says `restart_cut` and the power is off again: restart again.
    pub fn restart(&mut self) -> Result<PowerCut> {
        let Some(cut) = self.off.take() else {
            return Err(Error::bad_job(Invalid::unnamed(
                "restart",
                says("the power is on (no cut to recover from)"),
            )));
        };
        let armed = self.cut_at.take();
        let (report, again) = self.runner.restart(&mut self.dev, &self.hfsl, cut, armed)?;
        match again {
            Some(c) => self.off = Some(c),
            // Not reached: still armed for the requests to come.
            None => self.cut_at = armed,
        }
        Ok(report)
    }

    /// Halt (§2.6.1): write every map entry changed since it was last written to the PCM's map
    /// area (with `hfsl.map_store = "pcm"`, none is). Returns the simulated time it took and
    /// the bytes written.
    pub fn halt(&mut self) -> Result<(SimTime, u64)> {
        self.power_is_on()?;
        let before = self.runner.map.counters.map_bytes_written;
        let now = self.dev.now();
        let ops = self.runner.map.halt().map.clone();
        self.runner.run_raw(&mut self.dev, &ops)?;
        let bytes = self.runner.map.counters.map_bytes_written - before;
        Ok((self.dev.now() - now, bytes))
    }

    /// What logical page `lpn`'s sub-pages hold, read through the map: the number of the write
    /// request (counted from 1) whose data each holds, 0 if none, `persist::TORN` if a cut
    /// write left it torn.
    pub fn read_back(&self, lpn: u64) -> Result<Vec<u32>> {
        self.tracking()?;
        self.power_is_on()?;
        let pages = self.runner.map.logical_pages() as u64;
        if lpn >= pages {
            return Err(Error::bad_job(Invalid::unnamed(
                "lpn",
                got(lpn, format!("below {pages} (the logical pages)")),
            )));
        }
        let media = self.runner.media.as_ref().expect("tracking");
        Ok(media.read_back(&self.runner.map, lpn as u32))
    }

    /// Run `io`, arriving at `at` or at the simulated present if that is later, to completion.
    /// A write into another application's range is refused with its reason and changes
    /// nothing; a range beyond the logical space is refused naming it.
    pub fn submit(&mut self, io: HostIo, at: SimTime) -> Result<HostDone> {
        self.power_is_on()?;
        if io.write {
            if let Some(why) = self.runner.refuse(&io) {
                return Err(Error::job(why));
            }
        }
        let end = io.offset.checked_add(io.len);
        let space = self.logical_bytes();
        if io.len == 0 || end.is_none_or(|e| e > space) {
            return Err(Error::bad_job(Invalid::unnamed(
                "offset, length",
                got(
                    format!("{} bytes from byte {}", io.len, io.offset),
                    format!("at least 1 byte within the logical space ({space} bytes)"),
                ),
            )));
        }
        let now = self.dev.now();
        let r = &mut self.runner;
        r.source.0 = Some((at.max(now), io));
        r.exhausted = false;
        r.last = None;
        r.advance(&mut self.dev, now);
        let cut = match self.cut_at {
            Some(event) => run_to_event(&mut self.dev, r, event, &mut |_, _| true)?,
            None => {
                self.dev.run(r, u64::MAX, &mut |_, _| true)?;
                false
            }
        };
        if let Some(e) = r.failed.take() {
            return Err(e);
        }
        if self.dev.now() == SimTime::MAX {
            return Err(crate::driver::clock_end("request", at.max(now)));
        }
        if cut {
            self.cut_at = None;
            let done = r.last.take();
            let report = r.cut(&mut self.dev)?.report;
            let at = report.at;
            self.off = Some(report);
            return Ok(match done {
                Some(d) => HostDone {
                    power_cut: true,
                    ..d
                },
                None => HostDone {
                    arrival: at.min(self.runner.arrival),
                    completed: at,
                    raw_commands: self.runner.report.raw_commands - self.runner.raw_before,
                    power_cut: true,
                    acknowledged: false,
                    version: self.runner.started,
                },
            });
        }
        r.last.take().ok_or_else(|| {
            Error::bad_device(Invalid::unnamed(
                "hfsl",
                says("a host request did not complete"),
            ))
        })
    }

    /// Bytes of a PCM sub-page: the unit HFSL tracks data in (`hfsl.sub_page`).
    pub fn sub_page_bytes(&self) -> u64 {
        self.runner.map.page_bytes() / self.runner.map.sub_pages() as u64
    }

    /// Bytes of the logical space.
    pub fn logical_bytes(&self) -> u64 {
        self.runner.map.logical_pages() as u64 * self.hw.nand_page_bytes
    }

    /// Where logical page `lpn` lives.
    pub fn location(&self, lpn: u64) -> Result<map::Loc> {
        let pages = self.runner.map.logical_pages() as u64;
        if lpn >= pages {
            return Err(Error::bad_job(Invalid::unnamed(
                "lpn",
                got(lpn, format!("below {pages} (the logical pages)")),
            )));
        }
        Ok(self.runner.map.entry(lpn as u32).loc)
    }

    pub fn info(&self) -> &HardwareInfo {
        &self.hw
    }

    /// Every NAND block's P/E count.
    pub fn erase_counts(&self) -> &[u32] {
        self.dev.backend().raw().map_or(&[], |r| r.erase_counts())
    }

    /// What HFSL did so far.
    pub fn report(&self) -> HfslReport {
        self.runner.final_report()
    }

    /// The simulated present.
    pub fn now(&self) -> SimTime {
        self.dev.now()
    }
}
