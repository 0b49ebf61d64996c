//! What survives a power cut under HFSL (seed 002 §2.6.1; issue 11 point 6): a model of the
//! data on the media, kept beside the map when a run may lose power.
//!
//! Data is modelled as versions: each host write request has its own number, and every PCM
//! sub-page and NAND page sub-page holds the number of the write whose bytes it holds (0: none;
//! [`TORN`]: a write or erase the cut interrupted). The map plans what each raw command leaves
//! (`HfslMap::track_versions`); [`Media`] takes it when the command *completes*, so at a cut
//! the media hold exactly what the completed commands wrote, and the commands in flight leave
//! their places torn. The map area's entries are modelled the same way ([`Persisted`]): an
//! entry write in flight leaves each entry it covers either old or new (an 8-byte entry is
//! assumed written atomically, as a memory-bus PCM writes a word).
//!
//! The host's view is kept too: what each sub-page of the logical space held when its last
//! write was acknowledged. After a restart [`Media::lost`] reads every page back through the
//! recovered map and counts what differs; the write the cut interrupted may read back old,
//! new or torn in the sub-pages it covers, as a block device's contract allows.

use super::map::{HfslMap, Loc, Persisted};
use crate::device::{Flags, Request};
use crate::request::Op;

/// A place a cut write or erase left in an unknown state.
pub const TORN: u32 = u32::MAX;

pub struct Media {
    sub_pages: usize,
    sub_page: u64,
    page_bytes: u64,
    /// Per PCM slot sub-page and per NAND page sub-page: the version held.
    pub pcm: Vec<u32>,
    pub nand: Vec<u32>,
    /// The PCM map area: one entry per logical page.
    pub persisted: Vec<Persisted>,
    /// Per logical sub-page: the version of its last acknowledged write.
    acked: Vec<u32>,
    /// The write request under way: its sub-pages and version.
    writing: Option<(std::ops::Range<u64>, u32)>,
}

/// What a restart found missing, read back through the recovered map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lost {
    /// Logical pages with a sub-page that does not read back its acknowledged version, and
    /// those sub-pages.
    pub pages: u64,
    pub sub_pages: u64,
    /// Sub-pages of the write the cut interrupted that read back old, new and torn.
    pub cut_write_old: u64,
    pub cut_write_new: u64,
    pub cut_write_torn: u64,
}

impl Media {
    /// Empty media under `map`, which must track versions.
    pub fn new(map: &HfslMap) -> Media {
        let n = map.sub_pages() as usize;
        let slots = (map.map_base() / map.page_bytes()) as usize;
        Media {
            sub_pages: n,
            sub_page: map.page_bytes() / n as u64,
            page_bytes: map.page_bytes(),
            pcm: vec![0; slots * n],
            nand: vec![0; map.nand_pages() as usize * n],
            persisted: vec![Persisted::UNMAPPED; map.logical_pages() as usize],
            acked: vec![0; map.logical_pages() as usize * n],
            writing: None,
        }
    }

    /// Bytes the model holds for a map of `logical_pages` over `slots` PCM slots and
    /// `nand_pages` NAND pages of `sub_pages` sub-pages (with the map's own copy of the
    /// versions), for the memory check before a run.
    pub fn bytes_for(logical_pages: u64, slots: u64, nand_pages: u64, sub_pages: u64) -> u64 {
        let versions = (slots + nand_pages) * sub_pages * 4;
        2 * versions + logical_pages * (sub_pages * 4 + 16)
    }

    /// A host write of `len` bytes at `offset`, version `version`, starts.
    pub fn begin_write(&mut self, offset: u64, len: u64, version: u32) {
        let first = offset / self.sub_page;
        let end = (offset + len).div_ceil(self.sub_page);
        self.writing = Some((first..end, version));
    }

    /// The host request under way was acknowledged.
    pub fn acknowledge(&mut self) {
        if let Some((range, version)) = self.writing.take() {
            for s in range {
                self.acked[s as usize] = version;
            }
        }
    }

    /// Raw command `r` completed: the media now hold what the map planned for its places.
    pub fn completed(&mut self, r: &Request, map: &HfslMap) {
        self.apply(r, map, None);
    }

    /// Raw command `r` was in flight when the power failed: its places are torn; map entries
    /// are each old or new, by `coin(lpn)`.
    pub fn cut(&mut self, r: &Request, map: &HfslMap, coin: &dyn Fn(u32) -> bool) {
        self.apply(r, map, Some(coin));
    }

    fn apply(&mut self, r: &Request, map: &HfslMap, cut: Option<&dyn Fn(u32) -> bool>) {
        let n = self.sub_pages;
        let pcm = r.flags.contains(Flags::PCM);
        match (r.op, pcm) {
            (Op::Write, true) if r.offset >= map.map_base() => {
                let eb = map.entry_bytes();
                let first = (r.offset - map.map_base()) / eb;
                for lpn in first..first + r.len / eb {
                    let lpn = lpn as u32;
                    if cut.is_none_or(|coin| coin(lpn)) {
                        self.persisted[lpn as usize] = map.persisted(lpn);
                    }
                }
            }
            (Op::Write, true) => {
                let slot = (r.offset / self.page_bytes) as u32;
                let within = r.offset % self.page_bytes;
                let subs = (within / self.sub_page) as usize
                    ..(within + r.len).div_ceil(self.sub_page) as usize;
                let planned = map.planned_pcm(slot);
                for s in subs {
                    self.pcm[slot as usize * n + s] = if cut.is_some() { TORN } else { planned[s] };
                }
            }
            (Op::Write, false) => {
                let page = (r.offset / self.page_bytes) as u32;
                let at = page as usize * n;
                if cut.is_some() {
                    self.nand[at..at + n].fill(TORN);
                } else {
                    self.nand[at..at + n].copy_from_slice(map.planned_nand(page));
                }
            }
            (Op::Erase, _) => {
                let first = (r.offset / self.page_bytes) as usize * n;
                let pages = (r.len / self.page_bytes) as usize;
                let fill = if cut.is_some() { TORN } else { 0 };
                self.nand[first..first + pages * n].fill(fill);
            }
            _ => {}
        }
    }

    /// What logical page `lpn`'s sub-pages read back as through `map`.
    pub fn read_back(&self, map: &HfslMap, lpn: u32) -> Vec<u32> {
        let n = self.sub_pages;
        let e = map.entry(lpn);
        (0..n)
            .map(|s| match e.loc {
                Loc::Unmapped => 0,
                Loc::Nand => self.nand[e.addr as usize * n + s],
                Loc::Pcm if e.state & (1 << s) != 0 => self.pcm[e.addr as usize * n + s],
                Loc::Pcm => 0,
            })
            .collect()
    }

    /// Read every logical page back through the recovered `map` and count what is lost; then
    /// the host's view starts again from what it reads (the write the cut interrupted was never
    /// acknowledged, and what is lost is gone).
    pub fn lost(&mut self, map: &HfslMap) -> Lost {
        let mut lost = Lost::default();
        let n = self.sub_pages;
        let writing = self.writing.take();
        for lpn in 0..map.logical_pages() {
            let got = self.read_back(map, lpn);
            let mut page_lost = false;
            for (s, &v) in got.iter().enumerate() {
                let i = lpn as usize * n + s;
                let want = self.acked[i];
                match &writing {
                    Some((range, new)) if range.contains(&(i as u64)) => {
                        if v == want {
                            lost.cut_write_old += 1;
                        } else if v == *new {
                            lost.cut_write_new += 1;
                        } else if v == TORN {
                            lost.cut_write_torn += 1;
                        } else {
                            lost.sub_pages += 1;
                            page_lost = true;
                        }
                    }
                    _ if v != want => {
                        lost.sub_pages += 1;
                        page_lost = true;
                    }
                    _ => {}
                }
            }
            lost.pages += page_lost as u64;
            let at = lpn as usize * n;
            self.acked[at..at + n].copy_from_slice(&got);
        }
        lost
    }
}
