//! An opt-in oracle of data placement, for tests: every accepted write of a logical unit gets a
//! new version; the version travels with the data into the cache buffer, through flushes and GC
//! copies to NAND; every read checks that it found the latest accepted version wherever it
//! looked. A write is "accepted" when the controller places its data (in the buffer, or mapped
//! to NAND); a read looks at the controller's state when it is dispatched, so it must see
//! exactly the latest accepted version (0 for never written or trimmed).

use std::collections::HashMap;

#[derive(Default)]
pub struct DataCheck {
    latest: HashMap<u64, u32>,
    on_nand: HashMap<u32, u32>,
    in_line: HashMap<u32, u32>,
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

    /// A write of `lpn` mapped straight to NAND unit `pun`.
    pub fn write_to_nand(&mut self, lpn: u64, pun: u32) {
        let v = self.next(lpn);
        self.on_nand.insert(pun, v);
    }

    /// A write of `lpn` placed in buffer line `slot`.
    pub fn write_to_line(&mut self, lpn: u64, slot: u32) {
        let v = self.next(lpn);
        self.in_line.insert(slot, v);
    }

    /// A clean copy of NAND unit `pun` went into line `slot` (read allocate, write-through).
    pub fn fill_line(&mut self, slot: u32, pun: Option<u32>) {
        let v = pun.and_then(|p| self.on_nand.get(&p).copied()).unwrap_or(0);
        self.in_line.insert(slot, v);
    }

    /// Line `slot` is being flushed to NAND unit `pun`.
    pub fn flush(&mut self, slot: u32, pun: u32) {
        let v = self.in_line.get(&slot).copied().unwrap_or(0);
        self.on_nand.insert(pun, v);
    }

    /// GC copied `from` to `to`.
    pub fn moved(&mut self, from: u32, to: u32) {
        let v = self.on_nand.get(&from).copied().unwrap_or(0);
        self.on_nand.insert(to, v);
    }

    pub fn trimmed(&mut self, lpn: u64) {
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
