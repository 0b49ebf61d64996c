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

    /// Blocks holding data (Identify Namespace NUSE).
    pub fn allocated(&self) -> u64 {
        self.blocks.len() as u64
    }
}
