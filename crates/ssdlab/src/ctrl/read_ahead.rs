//! The firmware's read-ahead (`controller.read_ahead`, docs/nand.md "Read-ahead"): the
//! sequential read streams it follows, and for each host read the range of bytes to sense
//! ahead of its stream. Only the `page` scheme reads ahead (the page FTL with its whole map in
//! controller memory): it is that scheme's state (`backend::Scheme::Page`), and the HIL's page
//! path (`ctrl/hil/page.rs`) turns the range into read-ahead transactions. A cached map's
//! firmware would have to read translation pages it has not got, and a scheme with its own
//! map has no read-ahead: neither carries any of this.

use crate::media::nand::Geometry;
use std::ops::Range;

/// Sequential streams the read-ahead follows at once (assumed: a few concurrent readers).
const STREAMS: usize = 8;

/// How far before a stream's end a read may start and still continue it (assumed: a queue
/// depth's worth of 4 KiB reads arriving out of order).
const STREAM_SLACK: u64 = 128 << 10;

/// A read stream: where its next read starts if it is sequential, and how far (bytes) its
/// read-ahead has already been asked for.
#[derive(Clone, Copy, Debug)]
struct Stream {
    next: u64,
    ahead: u64,
}

/// What the firmware keeps to read ahead: how far (`controller.read_ahead`) and the streams
/// it follows.
#[derive(Debug, Default)]
pub struct ReadAhead {
    /// `controller.read_ahead` in bytes (0: off).
    bytes: u64,
    streams: Vec<Stream>,
    /// The stream a new one replaces once `STREAMS` are followed (round robin).
    victim: usize,
}

impl ReadAhead {
    /// A read-ahead of `bytes` past each sequential read's end (0: off).
    pub fn new(bytes: u64) -> ReadAhead {
        ReadAhead {
            bytes,
            ..ReadAhead::default()
        }
    }

    /// Whether the firmware reads ahead at all.
    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.bytes != 0
    }

    /// A host read of `len` bytes at `offset` that starts where a followed stream's last read
    /// ended continues it: the bytes to sense ahead of it, in whole pages of `geo`, from the
    /// end of what was already read ahead up to `read_ahead` bytes past the read's end, no
    /// further than `logical_end` (None: nothing new). Any other read starts a stream of its
    /// own. Out of line: the page path only calls it with read-ahead on.
    #[cold]
    #[inline(never)]
    pub fn after(
        &mut self,
        offset: u64,
        len: u64,
        geo: &Geometry,
        logical_end: u64,
    ) -> Option<Range<u64>> {
        let end = offset.saturating_add(len);
        // Reads of one stream may reach the firmware a little out of order (several queues):
        // one that starts at most `STREAM_SLACK` bytes before the stream's end, or anywhere in
        // what it read ahead, continues it.
        let Some(i) = self.streams.iter().position(|s| {
            offset >= s.next.saturating_sub(STREAM_SLACK) && offset <= s.ahead.max(s.next)
        }) else {
            let s = Stream {
                next: end,
                ahead: end,
            };
            if self.streams.len() < STREAMS {
                self.streams.push(s);
            } else {
                self.streams[self.victim] = s;
                self.victim = (self.victim + 1) % STREAMS;
            }
            return None;
        };
        let s = &mut self.streams[i];
        s.next = s.next.max(end);
        // In whole logical pages, so that reads advancing a few KiB at a time do not ask for
        // one page again and again.
        let page_bytes = geo.unit_bytes * geo.units_per_page as u64;
        let from = s.ahead.max(end).div_ceil(page_bytes) * page_bytes;
        // No further than one page per plane from the read's start: a stream's pages go round
        // the planes, and a page read ahead further would replace an earlier one, not yet
        // read, in its plane's register.
        let one_round = offset.saturating_add(page_bytes * geo.planes() as u64);
        let to = end
            .saturating_add(self.bytes)
            .min(one_round)
            .div_ceil(page_bytes)
            .saturating_mul(page_bytes)
            .min(logical_end);
        if from >= to {
            return None;
        }
        s.ahead = to;
        Some(from..to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    /// small-tlc: 16 KiB pages of four 4 KiB units.
    fn geo() -> Geometry {
        Geometry::from_config(&SsdConfig::resolve("small-tlc", &[]).unwrap())
    }

    #[test]
    fn a_stream_is_read_ahead_once_its_second_read_continues_it() {
        let geo = geo();
        let page = 16 << 10;
        let mut ra = ReadAhead::new(64 << 10);
        assert!(ra.is_on());
        // The first read only starts a stream.
        assert_eq!(ra.after(0, 4096, &geo, u64::MAX), None);
        // The next continues it: whole pages from the read's end to 64 KiB past it.
        assert_eq!(ra.after(4096, 4096, &geo, u64::MAX), Some(page..5 * page));
        // What was asked for is not asked again.
        assert_eq!(ra.after(8192, 4096, &geo, u64::MAX), None);
        // A later read asks for what follows, never past the logical space.
        assert_eq!(
            ra.after(4 * page, 4096, &geo, 6 * page),
            Some(5 * page..6 * page)
        );
    }

    #[test]
    fn a_ninth_stream_replaces_the_streams_in_turn() {
        let geo = geo();
        let mut ra = ReadAhead::new(64 << 10);
        let far = 1 << 30;
        for s in 0..9u64 {
            assert_eq!(ra.after(s * far, 4096, &geo, u64::MAX), None);
        }
        // The second stream is still followed; the first was replaced by the ninth, so its
        // continuation starts a stream again.
        assert!(ra.after(far + 4096, 4096, &geo, u64::MAX).is_some());
        assert_eq!(ra.after(4096, 4096, &geo, u64::MAX), None);
        assert!(!ReadAhead::new(0).is_on());
    }
}
