//! What the HFSL test files share: the fusion device they run on and a deterministic request
//! mix, and a host write.
#![allow(dead_code)]

use ssdlab::driver::hfsl::HostIo;
use ssdlab::SsdConfig;

/// The seed 002 fusion device with 8 blocks per plane, and `extra` set.
pub fn fusion(extra: &[&str]) -> SsdConfig {
    let mut o = vec!["nand.blocks_per_plane=8".to_string()];
    o.extend(extra.iter().map(|s| s.to_string()));
    SsdConfig::resolve("seed002-fusion", &o).unwrap()
}

/// A deterministic mix: writes of 512 B to 8 KiB (every fifth flagged metadata) and reads,
/// over `pages` logical pages.
pub fn mix(n: u64, pages: u64) -> Vec<HostIo> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let sectors = 1 + (x >> 40) % 16;
            let sector = (x >> 8) % (pages * 4 - sectors);
            HostIo {
                write: !x.is_multiple_of(3),
                offset: sector * 512,
                len: sectors * 512,
                meta: x.is_multiple_of(5),
                app: 0,
            }
        })
        .collect()
}

/// A host write of `len` bytes at `offset`, not metadata, by application 0.
pub fn host_write(offset: u64, len: u64) -> HostIo {
    HostIo {
        write: true,
        offset,
        len,
        meta: false,
        app: 0,
    }
}
