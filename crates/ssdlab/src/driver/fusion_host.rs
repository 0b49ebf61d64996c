//! The user-visible fusion device: the raw commands a host FTL issues to seed 002's device
//! (`ctrl::fusion`), one at a time, each answered with its status, its simulated submission
//! and completion times and, for reads, the bytes. The Python `ssdlab.FusionDevice` is this
//! type; a host FTL written against it sees the simulated hardware's rules and timing.
//!
//! Arguments are checked against the geometry before anything is submitted: a page, block or
//! byte address beyond its space is an error naming the argument, and nothing happens. What the
//! media refuses (a program out of order) is a status, as the device reports it.
//!
//! The data is kept here, functionally (`device::store`), in step with what the device accepted:
//! a NAND page reads back what was programmed into it since its block's erase, or 0xFF when
//! erased (as NAND reads erased cells); a PCM byte reads back its last write, or 0 never
//! written. A program shorter than its pages is padded with 0xFF, as the seed's prototype fills
//! a partial page with invalid data (§3.2.1).

use crate::config::{BackendKind, Medium, SsdConfig};
use crate::device::store::Store;
use crate::device::HardwareInfo;
use crate::device::{Device, Flags, Request, Status};
use crate::error::{got, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;

/// One command's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Done {
    pub status: Status,
    /// When the host submitted it.
    pub submitted: SimTime,
    /// When the host finished its completion.
    pub completed: SimTime,
    /// A read's bytes (empty otherwise, and for a read the device refused).
    pub data: Vec<u8>,
}

impl Done {
    pub fn latency(&self) -> SimTime {
        self.completed - self.submitted
    }
}

/// The fusion device as a host FTL uses it.
pub struct FusionHost {
    dev: Device,
    info: HardwareInfo,
    /// NAND contents, one store block per page.
    nand: Store,
    /// PCM contents, by byte (blocks of one line).
    pcm: Store,
}

fn arg_error(arg: &str, got: u64, expected: String) -> Error {
    Error::bad_job(Invalid::unnamed(arg, crate::error::got(got, expected)))
}

/// A run of `count` units from `start` must lie inside a space of `n` units. The error blames
/// the argument at fault: the start when it is itself outside the space, else the count (zero,
/// or running past the end).
fn check_range(
    (start_arg, start): (&str, u64),
    (count_arg, count): (&str, u64),
    n: u64,
    unit: &str,
    space: &str,
) -> Result<()> {
    if start >= n {
        return Err(arg_error(
            start_arg,
            start,
            format!("a {unit} below {n} ({space} has {n} {unit}s)"),
        ));
    }
    let room = n - start;
    if count == 0 || count > room {
        let from = if start == 0 {
            String::new()
        } else {
            format!(", {room} of them from {start_arg} {start} on")
        };
        return Err(arg_error(
            count_arg,
            count,
            format!("1 to {room} {unit}s ({space} has {n} {unit}s{from})"),
        ));
    }
    Ok(())
}

impl FusionHost {
    /// Open the fusion device `cfg` describes; another device is refused.
    pub fn new(cfg: &SsdConfig, seed: u64) -> Result<FusionHost> {
        if cfg.medium() != Medium::Fusion {
            return Err(Error::bad_config(cfg.not_backend(format!(
                "a fusion device: {}",
                BackendKind::Fusion.what_sections_say()
            ))));
        }
        let dev = Device::new(cfg, seed)?;
        let info = dev.hardware_info().expect("a fusion device");
        Ok(FusionHost {
            nand: Store::new(info.nand_page_bytes as usize),
            pcm: Store::new(info.pcm_line_bytes as usize),
            info,
            dev,
        })
    }

    /// The hardware information the firmware publishes.
    pub fn info(&self) -> &HardwareInfo {
        &self.info
    }

    /// The simulated present: when the last command completed.
    pub fn now(&self) -> SimTime {
        self.dev.now()
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    fn pages(&self) -> u64 {
        self.info.nand_blocks as u64 * self.info.nand_pages_per_block as u64
    }

    /// P/E count of every block.
    pub fn erase_counts(&self) -> &[u32] {
        self.dev.backend().raw().expect("raw NAND").erase_counts()
    }

    /// The next page of `block` a program may go to (`pages_per_block` when full).
    pub fn next_page(&self, block: u64) -> Result<u32> {
        self.check_block(block, 1)?;
        Ok(self
            .dev
            .backend()
            .raw()
            .expect("raw NAND")
            .next_page(block as u32))
    }

    /// Writes to the PCM line holding byte `address` so far (its wear).
    pub fn pcm_line_writes(&self, address: u64) -> Result<u32> {
        self.check_pcm(address, 1)?;
        let p = self.dev.backend().pcm().expect("PCM");
        Ok(p.media.wear.get(address / self.info.pcm_line_bytes))
    }

    fn check_block(&self, block: u64, blocks: u64) -> Result<()> {
        let n = self.info.nand_blocks as u64;
        check_range(("block", block), ("blocks", blocks), n, "block", "the NAND")
    }

    fn check_pages(&self, page: u64, pages: u64) -> Result<()> {
        check_range(
            ("page", page),
            ("pages", pages),
            self.pages(),
            "page",
            "the NAND",
        )
    }

    fn check_pcm(&self, address: u64, len: u64) -> Result<()> {
        let n = self.info.pcm_bytes;
        check_range(("address", address), ("length", len), n, "byte", "the PCM")
    }

    /// Submit one request at `at` (not before the present) and run the device until it is
    /// idle.
    fn run(&mut self, op: Op, offset: u64, len: u64, flags: Flags, at: SimTime) -> Result<Done> {
        let submitted = at.max(self.dev.now());
        let r = Request {
            op,
            offset,
            len,
            queue: 0,
            flags,
            arrival: submitted,
        };
        self.dev.submit(submitted, r)?;
        let done = self.dev.run_to_idle()?;
        let &(_, completed, status) = done.last().expect("the request completes");
        // Simulated time saturates: at the clock's end this command and every later one would
        // report a latency of 0.
        if completed == SimTime::MAX {
            return Err(super::clock_end("command", submitted));
        }
        Ok(Done {
            status,
            submitted,
            completed,
            data: Vec::new(),
        })
    }

    /// Read `len` bytes of PCM at byte `address`.
    pub fn pcm_read(&mut self, address: u64, len: u64, at: SimTime) -> Result<Done> {
        self.check_pcm(address, len)?;
        let mut d = self.run(Op::Read, address, len, Flags::PCM, at)?;
        if d.status == Status::Ok {
            d.data = vec![0; len as usize];
            self.pcm.read_bytes(address, &mut d.data);
        }
        Ok(d)
    }

    /// Write `data` into the PCM at byte `address`, in place.
    pub fn pcm_write(&mut self, address: u64, data: &[u8], at: SimTime) -> Result<Done> {
        self.check_pcm(address, data.len() as u64)?;
        let d = self.run(Op::Write, address, data.len() as u64, Flags::PCM, at)?;
        if d.status == Status::Ok {
            self.pcm.write_bytes(address, data);
        }
        Ok(d)
    }

    /// Read `pages` NAND pages from page `page` (pages numbered block by block).
    pub fn nand_read(&mut self, page: u64, pages: u64, at: SimTime) -> Result<Done> {
        self.check_pages(page, pages)?;
        let pb = self.info.nand_page_bytes;
        let mut d = self.run(Op::Read, page * pb, pages * pb, Flags::NONE, at)?;
        if d.status == Status::Ok {
            let ppb = self.info.nand_pages_per_block as u64;
            let raw = self.dev.backend().raw().expect("raw NAND");
            d.data = vec![0; (pages * pb) as usize];
            for (i, out) in d.data.chunks_mut(pb as usize).enumerate() {
                let p = page + i as u64;
                if (p % ppb) < raw.next_page((p / ppb) as u32) as u64 {
                    self.nand.read(p, out);
                } else {
                    out.fill(0xFF);
                }
            }
        }
        Ok(d)
    }

    /// Program `data` into the NAND from page `page`: whole pages, the last padded with 0xFF.
    /// The device refuses (`ProgramOrder`) pages that are not the next erased ones of their
    /// block.
    pub fn nand_program(&mut self, page: u64, data: &[u8], at: SimTime) -> Result<Done> {
        let pb = self.info.nand_page_bytes;
        if data.is_empty() {
            return Err(arg_error("data", 0, "at least 1 byte".into()));
        }
        let pages = (data.len() as u64).div_ceil(pb);
        self.check_pages(page, 1)?;
        let room = self.pages() - page;
        if pages > room {
            return Err(Error::bad_job(Invalid::unnamed("data", got(format!("{} bytes", data.len()), format!("at most {} ({room} page(s) of {pb} bytes from page {page} to the NAND's end)", room * pb)))));
        }
        let d = self.run(Op::Write, page * pb, pages * pb, Flags::NONE, at)?;
        if d.status == Status::Ok {
            let mut buf = vec![0xFF; (pages * pb) as usize];
            buf[..data.len()].copy_from_slice(data);
            self.nand.write(page, &buf);
        }
        Ok(d)
    }

    /// Erase `blocks` NAND blocks from block `block`.
    pub fn nand_erase(&mut self, block: u64, blocks: u64, at: SimTime) -> Result<Done> {
        self.check_block(block, blocks)?;
        let bb = self.info.nand_block_bytes();
        let d = self.run(Op::Erase, block * bb, blocks * bb, Flags::NONE, at)?;
        if d.status == Status::Ok {
            let ppb = self.info.nand_pages_per_block as u64;
            self.nand.deallocate(block * ppb, blocks * ppb);
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> FusionHost {
        let cfg =
            SsdConfig::resolve("seed002-fusion", &["nand.blocks_per_plane=4".into()]).unwrap();
        FusionHost::new(&cfg, 1).unwrap()
    }

    #[test]
    fn data_reads_back_as_the_media_keeps_it() {
        let mut h = host();
        let t = SimTime::ZERO;
        // Erased NAND reads 0xFF; a short program is padded with it.
        let d = h.nand_read(0, 1, t).unwrap();
        assert!(d.data.iter().all(|&b| b == 0xFF));
        let d = h.nand_program(0, b"hello", t).unwrap();
        assert_eq!(d.status, Status::Ok);
        let d = h.nand_read(0, 1, t).unwrap();
        assert_eq!(&d.data[..5], b"hello");
        assert!(d.data[5..].iter().all(|&b| b == 0xFF));
        // A refused program changes nothing.
        let d = h.nand_program(0, b"again", t).unwrap();
        assert_eq!(d.status, Status::ProgramOrder);
        assert_eq!(&h.nand_read(0, 1, t).unwrap().data[..5], b"hello");
        // Erased: 0xFF again, and the block's P/E count is 1.
        assert_eq!(h.nand_erase(0, 1, t).unwrap().status, Status::Ok);
        assert!(h
            .nand_read(0, 1, t)
            .unwrap()
            .data
            .iter()
            .all(|&b| b == 0xFF));
        assert_eq!(h.erase_counts()[0], 1);
        assert_eq!(h.next_page(0).unwrap(), 0);
        // PCM: byte-addressed, in place; never written reads 0.
        assert_eq!(h.pcm_write(510, b"abcd", t).unwrap().status, Status::Ok);
        assert_eq!(h.pcm_write(511, b"X", t).unwrap().status, Status::Ok);
        assert_eq!(h.pcm_read(509, 6, t).unwrap().data, b"\0aXcd\0");
        assert_eq!(h.pcm_line_writes(0).unwrap(), 2);
        assert_eq!(h.pcm_line_writes(512).unwrap(), 1);
    }

    #[test]
    fn time_moves_on_and_a_later_submission_waits_for_its_time() {
        let mut h = host();
        let a = h.pcm_write(0, &[1; 512], SimTime::ZERO).unwrap();
        assert_eq!(a.submitted, SimTime::ZERO);
        assert!(a.latency() > SimTime::from_us(93), "Table 7: 93.5 us");
        // Submitted "at 0" again: not before the present.
        let b = h.pcm_read(0, 512, SimTime::ZERO).unwrap();
        assert_eq!(b.submitted, a.completed);
        let later = a.completed + SimTime::from_us(1000);
        let c = h.nand_read(0, 1, later).unwrap();
        assert_eq!(c.submitted, later);
    }

    #[test]
    fn addresses_beyond_the_geometry_are_errors_naming_the_argument() {
        let mut h = host();
        let t = SimTime::ZERO;
        let pages = h.pages();
        let blocks = h.info().nand_blocks as u64;
        let pcm = h.info().pcm_bytes;
        let err = |r: Result<Done>| r.unwrap_err().to_string();
        let e = err(h.nand_read(pages, 1, t));
        assert!(e.starts_with(&format!("page: got {pages}")), "{e}");
        // A count that is zero or runs past the end is blamed on the count, not the start.
        let e = err(h.nand_read(pages - 1, 2, t));
        assert!(e.starts_with("pages: got 2, expected 1 to 1 pages"), "{e}");
        assert!(err(h.nand_read(0, 0, t)).starts_with("pages: got 0"));
        assert!(err(h.nand_read(u64::MAX, 2, t)).starts_with("page:"));
        assert!(err(h.nand_read(1, u64::MAX, t)).starts_with("pages:"));
        let e = err(h.nand_program(pages - 1, &[0; 4097], t));
        assert!(
            e.starts_with("data: got 4097 bytes, expected at most 2048"),
            "{e}"
        );
        assert!(err(h.nand_erase(0, 0, t)).starts_with("blocks: got 0"));
        assert!(err(h.nand_erase(blocks - 1, 2, t)).starts_with("blocks: got 2"));
        assert!(err(h.pcm_read(pcm - 1, 2, t)).starts_with("length: got 2"));
        assert!(err(h.nand_program(0, &[], t)).starts_with("data:"));
        assert!(err(h.nand_erase(blocks, 1, t)).starts_with(&format!("block: got {blocks}")));
        assert!(err(h.pcm_read(pcm, 1, t)).starts_with(&format!("address: got {pcm}")));
        assert!(err(h.pcm_write(u64::MAX, b"x", t)).starts_with("address:"));
        assert!(err(h.pcm_read(0, 0, t)).starts_with("length: got 0"));
        assert!(h.next_page(blocks).is_err());
        assert!(h.pcm_line_writes(pcm).is_err());
        // Nothing was submitted.
        assert_eq!(h.now(), SimTime::ZERO);
        assert_eq!(h.device().events(), 0);
        // Another device is refused, a config error naming it, its back end and the one
        // needed.
        let e = FusionHost::new(&SsdConfig::resolve("small-tlc", &[]).unwrap(), 1)
            .err()
            .unwrap();
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        let i = e.invalid().expect("parts as data");
        assert_eq!(i.origin, "small-tlc");
        assert!(
            i.value.as_deref().unwrap().starts_with("a page device"),
            "{i:?}"
        );
        assert!(
            e.to_string().contains("expected a fusion device: [nand]"),
            "{e}"
        );
    }
}
