//! The device's functional contents: what was written, so it reads back byte for byte. Timing
//! is not here (the performance model has it); this is only the data. A driver that moves real
//! data (the register-level NVMe controller, a live server) turns it on with
//! `Device::enable_store` and keeps it in step with the requests it submits.

use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Block {
    /// Every byte of the block has this value (kept small: a job's fill pattern costs no memory).
    Fill(u8),
    Data(Box<[u8]>),
}

/// Sparse logical blocks of one size. Blocks never written, or deallocated, read as zeros (as an
/// NVMe namespace with Identify Namespace DLFEAT = 001b does).
#[derive(Clone, Debug)]
pub struct Store {
    lba_size: usize,
    blocks: BTreeMap<u64, Block>,
}

impl Store {
    pub fn new(lba_size: usize) -> Store {
        Store {
            lba_size,
            blocks: BTreeMap::new(),
        }
    }

    pub fn lba_size(&self) -> usize {
        self.lba_size
    }

    /// Bytes the store holds on the heap: each block's entry, and the data of the blocks that
    /// are not one repeated byte.
    pub fn held_bytes(&self) -> u64 {
        let entry = std::mem::size_of::<(u64, Block)>() as u64;
        self.blocks
            .values()
            .map(|b| match b {
                Block::Fill(_) => entry,
                Block::Data(d) => entry + d.len() as u64,
            })
            .sum()
    }

    /// Write whole blocks from `lba` on; `data.len()` is a multiple of the block size.
    pub fn write(&mut self, lba: u64, data: &[u8]) {
        for (i, chunk) in data.chunks(self.lba_size).enumerate() {
            let first = chunk[0];
            let b = if chunk.iter().all(|&x| x == first) {
                Block::Fill(first)
            } else {
                Block::Data(chunk.to_vec().into_boxed_slice())
            };
            self.blocks.insert(lba + i as u64, b);
        }
    }

    /// Read whole blocks from `lba` on into `out` (a multiple of the block size).
    pub fn read(&self, lba: u64, out: &mut [u8]) {
        for (i, chunk) in out.chunks_mut(self.lba_size).enumerate() {
            match self.blocks.get(&(lba + i as u64)) {
                None => chunk.fill(0),
                Some(Block::Fill(v)) => chunk.fill(*v),
                Some(Block::Data(d)) => chunk.copy_from_slice(d),
            }
        }
    }

    /// Deallocate `n` blocks from `lba` on.
    pub fn deallocate(&mut self, lba: u64, n: u64) {
        let end = lba.saturating_add(n);
        let keys: Vec<u64> = self.blocks.range(lba..end).map(|(&k, _)| k).collect();
        for k in keys {
            self.blocks.remove(&k);
        }
    }

    /// Write `data` at byte `offset`, any alignment: partial blocks keep the rest of their bytes.
    pub fn write_bytes(&mut self, offset: u64, data: &[u8]) {
        self.edit(offset, data.len() as u64, |_, buf, done| {
            buf.copy_from_slice(&data[done..done + buf.len()]);
        });
    }

    /// Zero `len` bytes at byte `offset`: whole blocks are deallocated (they read as zeros).
    pub fn zero_bytes(&mut self, offset: u64, len: u64) {
        let lba = self.lba_size as u64;
        let first_whole = offset.div_ceil(lba);
        let end_whole = (offset + len) / lba;
        if end_whole > first_whole {
            self.deallocate(first_whole, end_whole - first_whole);
        }
        // The partial blocks at either end.
        let head_end = (first_whole * lba).min(offset + len);
        if head_end > offset {
            self.edit(offset, head_end - offset, |_, buf, _| buf.fill(0));
        }
        let tail_start = (end_whole * lba).max(offset);
        if end_whole >= first_whole && offset + len > tail_start {
            self.edit(tail_start, offset + len - tail_start, |_, buf, _| {
                buf.fill(0)
            });
        }
    }

    /// Read `out.len()` bytes at byte `offset`, any alignment.
    pub fn read_bytes(&self, offset: u64, out: &mut [u8]) {
        let lba = self.lba_size as u64;
        let mut block = vec![0u8; self.lba_size];
        let mut done = 0usize;
        while done < out.len() {
            let pos = offset + done as u64;
            let in_block = (pos % lba) as usize;
            let n = (self.lba_size - in_block).min(out.len() - done);
            self.read(pos / lba, &mut block);
            out[done..done + n].copy_from_slice(&block[in_block..in_block + n]);
            done += n;
        }
    }

    /// The byte range `offset .. offset + len` as runs of allocated blocks (true) and holes
    /// (false), in order, cut at block boundaries (the first and last run may be partial).
    pub fn extents(&self, offset: u64, len: u64) -> Vec<(u64, u64, bool)> {
        let lba = self.lba_size as u64;
        let end = offset + len;
        let mut runs: Vec<(u64, u64, bool)> = Vec::new();
        let mut push = |start, stop, allocated| push_extent(&mut runs, start, stop, allocated);
        let mut at = offset;
        for (&block, _) in self.blocks.range(offset / lba..end.div_ceil(lba)) {
            let b_start = (block * lba).max(offset);
            let b_end = ((block + 1) * lba).min(end);
            push(at, b_start, false);
            push(b_start, b_end, true);
            at = b_end;
        }
        push(at, end, false);
        runs
    }

    /// Change `len` bytes at `offset` block by block: `f(offset in block, bytes, bytes done)`.
    fn edit(&mut self, offset: u64, len: u64, mut f: impl FnMut(usize, &mut [u8], usize)) {
        let lba = self.lba_size as u64;
        let mut block = vec![0u8; self.lba_size];
        let mut done = 0u64;
        while done < len {
            let pos = offset + done;
            let in_block = (pos % lba) as usize;
            let n = (self.lba_size - in_block).min((len - done) as usize);
            if n < self.lba_size {
                self.read(pos / lba, &mut block);
            }
            f(in_block, &mut block[in_block..in_block + n], done as usize);
            self.write(pos / lba, &block);
            done += n as u64;
        }
    }

    /// Blocks holding data (Identify Namespace NUSE).
    pub fn allocated(&self) -> u64 {
        self.blocks.len() as u64
    }
}

/// Add bytes `start .. stop` (nothing when empty) to `runs` of (offset, length, allocated),
/// merged into the last run when it ends at `start` with the same state: the extents a block
/// status reply lists.
pub fn push_extent(runs: &mut Vec<(u64, u64, bool)>, start: u64, stop: u64, allocated: bool) {
    if stop <= start {
        return;
    }
    match runs.last_mut() {
        Some(last) if last.2 == allocated && last.0 + last.1 == start => last.1 += stop - start,
        _ => runs.push((start, stop - start, allocated)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Byte-range writes, zeroes and reads at any alignment agree with a flat byte array.
        #[test]
        fn byte_ranges_match_a_flat_array(
            ops in proptest::collection::vec((0u8..3, 0u64..4000, 1u64..1500, any::<u8>()), 1..40)
        ) {
            const SIZE: u64 = 6000;
            let mut store = Store::new(512);
            let mut flat = vec![0u8; SIZE as usize];
            for (kind, offset, len, v) in ops {
                let len = len.min(SIZE - offset);
                let range = offset as usize..(offset + len) as usize;
                match kind {
                    0 => {
                        let data: Vec<u8> = (0..len).map(|i| v.wrapping_add(i as u8)).collect();
                        store.write_bytes(offset, &data);
                        flat[range].copy_from_slice(&data);
                    }
                    1 => {
                        store.zero_bytes(offset, len);
                        flat[range].fill(0);
                    }
                    _ => {
                        let mut out = vec![0xAA; len as usize];
                        store.read_bytes(offset, &mut out);
                        prop_assert_eq!(&out[..], &flat[range]);
                    }
                }
            }
            let mut all = vec![0u8; SIZE as usize];
            store.read_bytes(0, &mut all);
            prop_assert_eq!(&all, &flat);
            // Extents tile the range in order, and holes read as zeros.
            let runs = store.extents(100, SIZE - 200);
            let mut at = 100;
            for &(start, len, allocated) in &runs {
                prop_assert_eq!(start, at);
                prop_assert!(len > 0);
                if !allocated {
                    prop_assert!(flat[start as usize..(start + len) as usize].iter().all(|&b| b == 0));
                }
                at += len;
            }
            prop_assert_eq!(at, SIZE - 100);
        }
    }
}
