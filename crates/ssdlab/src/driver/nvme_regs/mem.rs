//! Simulated host memory: sparse and byte-addressed. The controller reaches it by DMA (SQ
//! fetch, PRP lists, data, CQ entries); the host driver model reads and writes it directly.

use std::collections::BTreeMap;

/// Granule of the sparse map (assumed: the x86 page size; it has no meaning to the guest).
const PAGE: u64 = 4096;

/// Sparse host memory over the whole 64-bit address space. Memory never written reads as zeros.
/// Accesses that would run past the end of the address space stop there: the bytes beyond read
/// as zeros and writes to them are dropped (the controller checks ranges before DMA and reports
/// a Data Transfer Error instead).
#[derive(Clone, Debug, Default)]
pub struct HostMemory {
    pages: BTreeMap<u64, Box<[u8; PAGE as usize]>>,
}

impl HostMemory {
    pub fn new() -> HostMemory {
        HostMemory::default()
    }

    /// Fill `buf` from `addr` on.
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let Some(a) = addr.checked_add(done as u64) else {
                buf[done..].fill(0);
                return;
            };
            let page = a / PAGE;
            let off = (a % PAGE) as usize;
            let n = (PAGE as usize - off).min(buf.len() - done);
            match self.pages.get(&page) {
                Some(p) => buf[done..done + n].copy_from_slice(&p[off..off + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
    }

    /// Write `data` from `addr` on.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let Some(a) = addr.checked_add(done as u64) else {
                return;
            };
            let page = a / PAGE;
            let off = (a % PAGE) as usize;
            let n = (PAGE as usize - off).min(data.len() - done);
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| Box::new([0u8; PAGE as usize]));
            p[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// `len` bytes from `addr` as a new vector.
    pub fn read_vec(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.read(addr, &mut v);
        v
    }

    pub fn read_u32(&self, addr: u64) -> u32 {
        let mut b = [0u8; 4];
        self.read(addr, &mut b);
        u32::from_le_bytes(b)
    }

    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }

    pub fn write_u32(&mut self, addr: u64, v: u32) {
        self.write(addr, &v.to_le_bytes());
    }

    pub fn write_u64(&mut self, addr: u64, v: u64) {
        self.write(addr, &v.to_le_bytes());
    }

    /// Pages that have been written at least once (a measure of the memory held).
    pub fn resident_pages(&self) -> usize {
        self.pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_reads_zero_and_writes_cross_pages() {
        let mut m = HostMemory::new();
        assert_eq!(m.read_vec(0x1234_5678, 16), vec![0; 16]);
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        m.write(4090, &data);
        assert_eq!(m.read_vec(4090, data.len()), data);
        assert_eq!(m.resident_pages(), 4);
        m.write(u64::MAX - 1, &[1, 2, 3, 4]);
        assert_eq!(m.read_vec(u64::MAX - 1, 4), vec![1, 2, 0, 0]);
        m.write_u64(8, 0x0102_0304_0506_0708);
        assert_eq!(m.read_u32(8), 0x0506_0708);
    }
}
