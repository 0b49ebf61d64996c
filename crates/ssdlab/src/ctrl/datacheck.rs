//! An opt-in oracle of data placement, for tests: every accepted write of a logical unit gets a
//! new version; the version travels with the data into the cache buffer, through flushes and GC
//! copies to NAND; every read checks that it found the latest accepted version wherever it
//! looked. A write is "accepted" when the controller places its data (in the buffer, or mapped
//! to NAND); a read looks at the controller's state when it is dispatched, so it must see
//! exactly the latest accepted version (0 for never written or trimmed).
//!
//! The same hooks feed the power-loss model (`power_loss.rs`) when a run arms a power cut:
//! it is kept here so that the controller's paths test one field for both.

use super::power_loss::PowerLoss;
use crate::ftl::AnyFtl;
use std::collections::HashMap;

#[derive(Default)]
pub struct DataCheck {
    /// The power-loss model, when a power cut is armed.
    pub power: Option<Box<PowerLoss>>,
    latest: HashMap<u64, u32>,
    on_nand: HashMap<u32, u32>,
    in_line: HashMap<u32, u32>,
    /// Lines holding part of their unit (`cache.partial_lines = "merge-at-flush"`), by slot:
    /// the version the rest must come from (the unit's latest when the line was taken), and a
    /// plain model of the bytes written, one flag per byte, beside the buffer's sector masks.
    partial: HashMap<u32, (u32, Vec<bool>)>,
    /// Reads checked, and the first mismatch found.
    pub reads: u64,
    pub first_error: Option<String>,
}

impl DataCheck {
    fn next(&mut self, lpn: u64) -> u32 {
        let v = self.latest.entry(lpn).or_insert(0);
        *v += 1;
        *v
    }

    /// A write of `lpn` mapped straight to NAND unit `pun` (`old`: where it was mapped
    /// before; `ftl` as the write left it).
    pub fn write_to_nand(&mut self, lpn: u64, pun: u32, old: Option<u32>, ftl: &AnyFtl) {
        self.write_to_nand_in_place(lpn, pun);
        if let Some(p) = self.power.as_deref_mut() {
            p.write_to_nand(lpn, pun, old, ftl);
        }
    }

    /// A write of `lpn` mapped straight to NAND unit `pun` by a scheme with its own map (a
    /// block-mapped FTL, a zoned drive), which the power-loss model does not cover
    /// (`Device::enable_power_loss`). (The `_in_place` hooks are the oracle's part alone.)
    pub fn write_to_nand_in_place(&mut self, lpn: u64, pun: u32) {
        let v = self.next(lpn);
        self.on_nand.insert(pun, v);
    }

    /// A write of `lpn` placed in buffer line `slot`.
    pub fn write_to_line(&mut self, lpn: u64, slot: u32, ftl: &AnyFtl) {
        self.write_to_line_in_place(lpn, slot);
        if let Some(p) = self.power.as_deref_mut() {
            p.write_to_line(lpn, slot, ftl);
        }
    }

    /// A write of `lpn` placed in buffer line `slot` on a device without the page FTL (PCM-only,
    /// or a NAND scheme with its own map), which the power-loss model does not cover
    /// (`Device::enable_power_loss`).
    pub fn write_to_line_in_place(&mut self, lpn: u64, slot: u32) {
        let v = self.next(lpn);
        self.in_line.insert(slot, v);
    }

    /// `bytes` from byte `start` of unit `lpn` are being written into line `slot` of
    /// `line_bytes` (before [`DataCheck::write_to_line`] counts the write); `fresh`: the line
    /// was taken for this write.
    pub fn line_part(
        &mut self,
        slot: u32,
        lpn: u64,
        start: u64,
        bytes: u64,
        line_bytes: u64,
        fresh: bool,
    ) {
        if fresh {
            let base = self.latest.get(&lpn).copied().unwrap_or(0);
            self.partial
                .insert(slot, (base, vec![false; line_bytes as usize]));
        }
        if let Some((_, written)) = self.partial.get_mut(&slot) {
            written[start as usize..(start + bytes) as usize].fill(true);
            if written.iter().all(|&b| b) {
                self.partial.remove(&slot);
            }
        }
    }

    /// The rest of line `slot`'s unit is being read from NAND unit `pun` (None: never written,
    /// zeros) to merge with the line: it must hold the version the line was taken over. The
    /// line holds its whole unit once the rest is in ([`DataCheck::line_whole`]).
    pub fn merged(&mut self, slot: u32, pun: Option<u32>) {
        let Some(&(base, _)) = self.partial.get(&slot) else {
            self.error(format!(
                "buffer line {slot} read the rest of its unit, but every byte was written"
            ));
            return;
        };
        self.rest_from(slot, base, pun);
    }

    /// A read took what line `slot` does not hold from NAND unit `pun`; `held`: whether the
    /// buffer said the line holds the bytes read.
    pub fn read_part(&mut self, slot: u32, start: u64, bytes: u64, held: bool, pun: Option<u32>) {
        let Some((base, written)) = self.partial.get(&slot) else {
            if !held {
                self.error(format!(
                    "a read went past buffer line {slot}, which holds its whole unit"
                ));
            }
            return;
        };
        let base = *base;
        let all = written[start as usize..(start + bytes) as usize]
            .iter()
            .all(|&b| b);
        if held && !all {
            self.error(format!(
                "buffer line {slot} served bytes {start}..{} it does not hold",
                start + bytes
            ));
        }
        if !held {
            self.rest_from(slot, base, pun);
        }
    }

    /// The rest of line `slot`'s unit is in the line.
    pub fn line_whole(&mut self, slot: u32) {
        self.partial.remove(&slot);
    }

    /// A flush programs line `slot` without reading: every byte of it must have been written.
    pub fn flushed_whole(&mut self, slot: u32) {
        if self.partial.contains_key(&slot) {
            self.error(format!(
                "buffer line {slot} was flushed whole, but not every byte was written"
            ));
        }
    }

    fn rest_from(&mut self, slot: u32, base: u32, pun: Option<u32>) {
        let got = pun.and_then(|p| self.on_nand.get(&p).copied()).unwrap_or(0);
        if got != base {
            self.error(format!(
                "buffer line {slot} took the rest of its unit from version {got}, expected {base}"
            ));
        }
    }

    fn error(&mut self, e: String) {
        if self.first_error.is_none() {
            self.first_error = Some(e);
        }
    }

    /// A clean copy of NAND unit `pun` went into line `slot` (read allocate, write-through).
    pub fn fill_line(&mut self, slot: u32, pun: Option<u32>) {
        self.partial.remove(&slot);
        let v = pun.and_then(|p| self.on_nand.get(&p).copied()).unwrap_or(0);
        self.in_line.insert(slot, v);
        if let Some(p) = self.power.as_deref_mut() {
            p.fill_line(slot);
        }
    }

    /// Line `slot` is being flushed to NAND unit `pun`.
    pub fn flush(&mut self, slot: u32, pun: u32, ftl: &AnyFtl) {
        self.flush_in_place(slot, pun);
        if let Some(p) = self.power.as_deref_mut() {
            p.flush(slot, pun, ftl);
        }
    }

    /// Line `slot` is being flushed to NAND unit `pun` of a scheme with its own map.
    pub fn flush_in_place(&mut self, slot: u32, pun: u32) {
        let v = self.in_line.get(&slot).copied().unwrap_or(0);
        self.on_nand.insert(pun, v);
    }

    /// GC copied `from` to `to`, where the FTL maps `lpn` (UNMAPPED if it has changed since).
    pub fn moved(&mut self, from: u32, to: u32, lpn: u32, ftl: &AnyFtl) {
        self.moved_in_place(from, to);
        if let Some(p) = self.power.as_deref_mut() {
            p.moved(from, to, lpn, ftl);
        }
    }

    /// A scheme with its own map copied `from` to `to` (a block-mapped FTL's merge).
    pub fn moved_in_place(&mut self, from: u32, to: u32) {
        let v = self.on_nand.get(&from).copied().unwrap_or(0);
        self.on_nand.insert(to, v);
    }

    /// The power-loss model has taken a checkpoint whose map pages wait to be programmed
    /// (`FlashPort::program_checkpoint`).
    #[inline]
    pub fn checkpoint_due(&self) -> bool {
        self.power.as_deref().is_some_and(|p| p.checkpoint_due())
    }

    /// The cache buffer dropped the line of `lpn` (a FUA write goes past it).
    pub fn discarded(&mut self, lpn: u64) {
        if let Some(p) = self.power.as_deref_mut() {
            p.discarded(lpn);
        }
    }

    /// NAND unit `pun` holds no data now (a zoned drive's reset erased it, or a finish
    /// programmed filler there): reads of it find zeros.
    pub fn erased(&mut self, pun: u32) {
        self.on_nand.remove(&pun);
    }

    /// `lpn` is being trimmed (`ftl` before the trim).
    pub fn trimmed(&mut self, lpn: u64, ftl: &AnyFtl) {
        self.trimmed_in_place(lpn);
        if let Some(p) = self.power.as_deref_mut() {
            p.trimmed(lpn, ftl.lookup(lpn), ftl);
        }
    }

    /// `lpn` of a scheme with its own map is being trimmed (or its zone reset).
    pub fn trimmed_in_place(&mut self, lpn: u64) {
        self.latest.insert(lpn, 0);
    }

    /// A read of `lpn` found its data in line `slot`, at NAND unit `pun`, or nowhere (None, None).
    pub fn read(&mut self, lpn: u64, slot: Option<u32>, pun: Option<u32>) {
        self.reads += 1;
        let want = self.latest.get(&lpn).copied().unwrap_or(0);
        let (got, from) = match (slot, pun) {
            (Some(s), _) => (
                self.in_line.get(&s).copied().unwrap_or(0),
                format!("buffer line {s}"),
            ),
            (None, Some(p)) => (
                self.on_nand.get(&p).copied().unwrap_or(0),
                format!("NAND unit {p}"),
            ),
            (None, None) => (0, "nowhere (unmapped)".to_string()),
        };
        if got != want && self.first_error.is_none() {
            self.first_error = Some(format!(
                "read #{} of logical unit {lpn} found version {got} in {from}, latest is {want}",
                self.reads
            ));
        }
    }
}
