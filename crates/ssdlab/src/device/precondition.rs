//! Preconditioning: the state a run's drive starts in (`[precondition]`, docs/config.md), laid
//! out untimed before any driver submits. It lives with the device so that every driver — a
//! job or replay (`run`), the live server, the register-level NVMe controller, the paging
//! model — starts from the same drive for the same config and seed.

use super::{Backend, Device, Scheme};
use crate::config::{FillMode, SsdConfig};
use crate::error::Result;
use crate::ftl::{Ftl, Translation};
use crate::stats::result::SteadyStateResult;
use std::time::Instant;

impl Device {
    /// Precondition the FTL as `cfg` says (untimed), or load the drive state it names
    /// (`precondition.state`); returns the wall seconds it took. Calls
    /// `progress(0, 0)` (nothing simulated yet, no known total) about ten times per wall second;
    /// returning false stops it with [`crate::error::Error::Interrupted`]. The random overwrites
    /// of a large drive take seconds to minutes, which an interrupt must not wait out.
    pub fn precondition_with(
        &mut self,
        cfg: &SsdConfig,
        seed: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<f64> {
        let t0 = Instant::now();
        let p = &cfg.precondition;
        if let Some(path) = &p.state {
            // A saved state stands for the whole preconditioning that made it (docs/state.md).
            self.load_state(cfg, path)?;
            return Ok(t0.elapsed().as_secs_f64());
        }
        // PCM is updated in place: no map to fill, nothing a fill would change.
        let Backend::Nand(nand) = self.backend_mut() else {
            return Ok(t0.elapsed().as_secs_f64());
        };
        match &mut nand.scheme {
            // A fusion device's NAND is its host's to fill; a zoned drive is written by its
            // host only (validation refuses preconditioning for it).
            Scheme::Fusion { .. } | Scheme::Zoned(_) => {}
            Scheme::BlockMapped(h) => {
                // A block-mapped FTL keeps its own map.
                if p.fill == FillMode::SteadyState {
                    let mut report = tenth_seconds(progress);
                    let mut keep_going = || report(0, 0);
                    h.ftl.steady_state = Some(h.ftl.reach_steady_state(seed, &mut keep_going)?);
                }
                h.ftl
                    .precondition(p.fill == FillMode::Sequential, p.random_overwrite, seed)?;
            }
            // Validation refuses preconditioning for a raw device: its driver prepares the media.
            Scheme::Raw(_) => {}
            Scheme::Page(ftl, _) => precondition_page(ftl, cfg, seed, progress)?,
            Scheme::Cached(ftl) => precondition_page(ftl, cfg, seed, progress)?,
        }
        Ok(t0.elapsed().as_secs_f64())
    }

    /// The steady state a `fill = "steady-state"` preconditioning reached, as a result reports
    /// it (`device.steady_state`); None for any other preconditioning.
    pub fn steady_state_result(&self) -> Option<SteadyStateResult> {
        self.backend().steady_state()
    }
}

/// Precondition the page FTL `ftl` as `cfg` says (see [`Device::precondition_with`]).
fn precondition_page<M: Translation>(
    ftl: &mut Ftl<M>,
    cfg: &SsdConfig,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<()> {
    let p = &cfg.precondition;
    if p.fill != FillMode::None || p.random_overwrite > 0.0 {
        let mut report = tenth_seconds(progress);
        let mut keep_going = || report(0, 0);
        if p.fill == FillMode::SteadyState {
            ftl.steady_state = Some(ftl.reach_steady_state(cfg, seed, &mut keep_going)?);
        }
        ftl.precondition_with(
            p.fill == FillMode::Sequential,
            p.random_overwrite,
            p.hot_cold(),
            seed,
            &mut keep_going,
        )?;
        // The result speaks of the timed run only; blocks keep the wear they got.
        ftl.stats = Default::default();
        ftl.reset_stream_stats();
    }
    Ok(())
}

/// `progress`, passed on at most about ten times per wall second (between, the caller goes on).
pub fn tenth_seconds<'a>(
    progress: &'a mut dyn FnMut(u64, u64) -> bool,
) -> impl FnMut(u64, u64) -> bool + 'a {
    let mut last_report = Instant::now();
    move |done, total| {
        if last_report.elapsed().as_millis() >= 100 {
            last_report = Instant::now();
            progress(done, total)
        } else {
            true
        }
    }
}
