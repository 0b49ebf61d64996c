//! A power cut of the live device (issue 43; docs/power-loss.md, "A cut from ssdlab serve"):
//! the bytes a cut could bring back, and putting the data store back to what the recovered
//! drive holds.
//!
//! The device's power-loss model (`ctrl::power_loss`) says, per logical unit, which version
//! recovery finds: each update (write or whole-unit trim) of a unit the controller accepts is
//! the unit's next version, from 1; 0 is what it held when the model was armed. The data store
//! is changed when a request completes, so after a cut it may hold a write the drive lost, and
//! lack one the drive kept (programmed, not yet completed). This journal keeps, per unit, the
//! bytes of every version a cut could still bring back, numbered as the model numbers them:
//! the server submits a unit's updates one after another (a client does not overlap writes to
//! one block while they are in flight: NBD gives no order among requests in flight), so the
//! order it submits them in is the order the controller accepts them in.
//!
//! Versions older than the newest one that must survive a cut are dropped: a FLUSH that
//! completes makes durable every write whose completion arrived before the FLUSH was
//! submitted (NVMe, Flush), so the journal holds the units written since the last completed
//! FLUSH, and a unit whose newest version is durable and in the store holds nothing. Trims
//! are the exception: the model makes them durable at a map checkpoint, a FLUSH or an erase
//! of the data they let go, so a cut may bring back what a trim replaced, and the journal
//! keeps it (past a FLUSH too: more than needed, never less) (with power cuts armed the server
//! sends WRITE_ZEROES as a write of zeros, which a FLUSH makes durable as NBD requires).

use super::accept::Open;
use super::data::{Data, DataSpec};
use super::Outbox;
use super::ServeOptions;
use crate::config::SsdConfig;
use crate::device::Device;
use crate::device::PowerCutOutcome;
use crate::error::{says, Error, Invalid, Result};
use crate::sim::SimTime;
use crate::stats::result::PowerLossResult;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One logical unit's versions.
#[derive(Debug, Default)]
struct Unit {
    /// Updates submitted since the model was armed: the newest version's number.
    submitted: u32,
    /// The newest version whose completion arrived.
    completed: u32,
    /// The bytes of each version a cut could bring back, oldest first (None: zeros, a trim);
    /// empty when only the store's copy can come back.
    kept: Vec<(u32, Option<Box<[u8]>>)>,
}

/// What a request did to the journal, to be told back when it completes.
#[derive(Debug, Default)]
pub enum Ticket {
    #[default]
    None,
    /// An update of units `first..`, each at the version listed.
    Update { first: u64, versions: Vec<u32> },
    /// A FLUSH: each unit the journal held and its newest completed version when it was
    /// submitted.
    Flush(Vec<(u64, u32)>),
}

/// What putting the store back did, for the cut's report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Restored {
    /// Units whose journal the cut consulted (written since the last completed FLUSH).
    pub units_journaled: u64,
    /// Units the store now holds another version of than before the cut: a completed write
    /// the drive lost, or a write it kept that had not completed.
    pub units_restored: u64,
    /// Units the model reads back as unmapped though they held data (zeros in the store).
    pub units_zeroed_unreadable: u64,
    /// Units whose recovered version the journal did not hold (server and model disagree:
    /// 0 unless a client overlapped writes to one block, or a write failed), and the first
    /// few of them: the unit, the version recovered, the versions held, the newest submitted
    /// and completed.
    pub units_unmatched: u64,
    pub unmatched: Vec<String>,
}

/// Bytes of versions the journal keeps before it drops those a completed FLUSH covered: below
/// it a cut brings back whatever version the model recovers, even one a drive that broke
/// FLUSH's promise lost (so that the data, not only the count of `units_unmatched`, shows
/// it). Chosen to hold a test's or a short session's writes; not a figure of any drive.
pub const KEEP_ALL_BYTES: u64 = 256 << 20;

#[derive(Debug)]
pub struct Journal {
    unit_bytes: u64,
    /// Bytes of the export (the last unit may be short).
    size: u64,
    units: HashMap<u64, Unit>,
    /// Bytes of versions held, and the most before completed FLUSHes drop versions.
    held_bytes: u64,
    keep_all_bytes: u64,
}

impl Journal {
    pub fn new(unit_bytes: u64, size: u64, keep_all_bytes: u64) -> Journal {
        Journal {
            unit_bytes,
            size,
            units: HashMap::new(),
            held_bytes: 0,
            keep_all_bytes,
        }
    }

    /// Units holding versions (for the live figures and tests).
    pub fn units_held(&self) -> usize {
        self.units.values().filter(|u| !u.kept.is_empty()).count()
    }

    fn unit_span(&self, lpn: u64) -> (u64, usize) {
        let at = lpn * self.unit_bytes;
        (at, self.unit_bytes.min(self.size - at) as usize)
    }

    /// A write (`data`, or zeros when None) of `offset .. offset + len` is submitted: each
    /// unit it touches gets its next version, the unit's bytes with the write laid over them.
    pub fn write(
        &mut self,
        store: &Data,
        offset: u64,
        len: u64,
        data: Option<&[u8]>,
    ) -> io::Result<Ticket> {
        self.update(store, offset, len, Some(data))
    }

    /// A trim of `offset .. offset + len` is submitted: the units it covers whole get their next
    /// version, zeros (a partly covered unit keeps its data, as the FTL keeps it).
    pub fn trim(&mut self, store: &Data, offset: u64, len: u64) -> io::Result<Ticket> {
        self.update(store, offset, len, None)
    }

    /// `write`: Some(the data, or None for zeros); None for a trim.
    fn update(
        &mut self,
        store: &Data,
        offset: u64,
        len: u64,
        write: Option<Option<&[u8]>>,
    ) -> io::Result<Ticket> {
        if len == 0 {
            return Ok(Ticket::None);
        }
        let end = offset + len;
        let first = offset / self.unit_bytes;
        let last = (end - 1) / self.unit_bytes;
        let mut versions = Vec::with_capacity((last - first + 1) as usize);
        for lpn in first..=last {
            let (at, n) = self.unit_span(lpn);
            let (from, to) = (offset.max(at), end.min(at + n as u64));
            let whole = from == at && to == at + n as u64;
            if write.is_none() && !whole {
                versions.push(0);
                continue;
            }
            let u = self.units.entry(lpn).or_default();
            if u.kept.is_empty() {
                // Nothing in flight and the newest version durable: the store holds it.
                let mut base = vec![0u8; n];
                store.read(at, &mut base)?;
                u.kept.push((u.submitted, Some(base.into_boxed_slice())));
                self.held_bytes += n as u64;
            }
            u.submitted += 1;
            let bytes = write.map(|data| {
                let mut bytes = match &u.kept.last().expect("a base").1 {
                    Some(b) if !whole => b.to_vec(),
                    _ => vec![0u8; n],
                };
                let span = &mut bytes[(from - at) as usize..(to - at) as usize];
                match data {
                    Some(d) => {
                        let s = (from - offset) as usize;
                        span.copy_from_slice(&d[s..s + span.len()]);
                    }
                    None => span.fill(0),
                }
                bytes.into_boxed_slice()
            });
            self.held_bytes += bytes.as_ref().map_or(0, |b| b.len() as u64);
            u.kept.push((u.submitted, bytes));
            versions.push(u.submitted);
        }
        Ok(Ticket::Update { first, versions })
    }

    /// A FLUSH is submitted.
    pub fn flush(&self) -> Ticket {
        let mut snapshot: Vec<(u64, u32)> = self
            .units
            .iter()
            .filter(|(_, u)| !u.kept.is_empty())
            .map(|(&lpn, u)| (lpn, u.completed))
            .collect();
        snapshot.sort_unstable();
        Ticket::Flush(snapshot)
    }

    /// The request of `ticket` completed (`ok`: successfully).
    pub fn completed(&mut self, ticket: Ticket, ok: bool) {
        match ticket {
            Ticket::None => {}
            Ticket::Update { first, versions } => {
                for (k, v) in versions.into_iter().enumerate() {
                    if let Some(u) = self.units.get_mut(&(first + k as u64)) {
                        u.completed = u.completed.max(v);
                    }
                }
            }
            Ticket::Flush(snapshot) if ok && self.held_bytes > self.keep_all_bytes => {
                let bytes = |k: &[(u32, Option<Box<[u8]>>)]| -> u64 {
                    k.iter()
                        .map(|v| v.1.as_ref().map_or(0, |b| b.len() as u64))
                        .sum()
                };
                for (lpn, durable) in snapshot {
                    let Some(u) = self.units.get_mut(&lpn) else {
                        continue;
                    };
                    // Versions before the durable one can no longer come back, but for what a
                    // trim replaced: the model's trims are durable only at a map checkpoint,
                    // so a cut may undo them (NBD lets a trimmed block read its old data).
                    let mut keep_from = u.kept.partition_point(|k| k.0 < durable);
                    keep_from = keep_from.min(u.kept.len().saturating_sub(1));
                    while keep_from > 0 && u.kept[keep_from..].iter().any(|k| k.1.is_none()) {
                        keep_from -= 1;
                    }
                    self.held_bytes -= bytes(&u.kept[..keep_from]);
                    u.kept.drain(..keep_from);
                    let trimmed = u.kept.iter().any(|k| k.1.is_none());
                    if u.kept.len() == 1
                        && !trimmed
                        && u.kept[0].0 == u.submitted
                        && u.completed == u.submitted
                    {
                        // Durable, completed and so in the store: nothing to keep.
                        self.held_bytes -= bytes(&u.kept);
                        u.kept.clear();
                    }
                }
            }
            Ticket::Flush(_) => {}
        }
    }

    /// The power failed: put each journaled unit in `store` back to the version recovery finds
    /// (`outcome.recovered`; a unit the model never saw change holds version 0), then start
    /// afresh (the next model counts versions from 0 again).
    pub fn restore(&mut self, store: &mut Data, outcome: &PowerCutOutcome) -> io::Result<Restored> {
        let mut r = Restored::default();
        let mut lpns: Vec<u64> = self
            .units
            .iter()
            .filter(|(_, u)| !u.kept.is_empty())
            .map(|(&l, _)| l)
            .collect();
        lpns.sort_unstable();
        for lpn in lpns {
            let u = &self.units[&lpn];
            r.units_journaled += 1;
            let (at, n) = self.unit_span(lpn);
            let want = match outcome.recovered.get(&lpn) {
                Some(Some(v)) => Some(*v),
                Some(None) => None,
                None => Some(0),
            };
            let Some(v) = want else {
                r.units_zeroed_unreadable += 1;
                store.zero(at, n as u64)?;
                continue;
            };
            let Some(k) = u.kept.iter().position(|k| k.0 == v) else {
                r.units_unmatched += 1;
                if r.unmatched.len() < 8 {
                    let held: Vec<u32> = u.kept.iter().map(|k| k.0).collect();
                    r.unmatched.push(format!(
                        "unit {lpn}: version {v} recovered, journal holds {held:?}, \
                         submitted {}, completed {}",
                        u.submitted, u.completed
                    ));
                }
                continue;
            };
            let mut now = vec![0u8; n];
            store.read(at, &mut now)?;
            let bytes = u.kept[k].1.as_deref();
            let differs = match bytes {
                Some(b) => b != now.as_slice(),
                None => now.iter().any(|&x| x != 0),
            };
            if differs {
                r.units_restored += 1;
                match bytes {
                    Some(b) => store.write(at, b)?,
                    None => store.zero(at, n as u64)?,
                }
            }
        }
        store.sync()?;
        self.units.clear();
        self.held_bytes = 0;
        Ok(r)
    }
}

/// The power cuts of a session, as its result and live figures report them.
#[derive(Debug, Default)]
pub struct Cuts {
    /// Each cut: the model's report (`PowerLossResult`) with the server's own figures.
    pub list: Vec<serde_json::Value>,
    /// The last cut's report, for the result's `power_loss`.
    pub last: Option<PowerLossResult>,
    /// Cuts asked for on a session without the power-loss model (no `--power-cuts`).
    pub refused: u64,
}

impl Cuts {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"cuts": self.list, "refused": self.refused})
    }

    /// The power fails now. The model says what recovery finds and how long it takes; every
    /// connection is closed (the drive is gone: nothing in flight is answered); the data store
    /// is put back to what the recovered drive holds; the session log, if any, ends (what
    /// follows ran on another drive). The drive then comes back as the server starts one
    /// (preconditioned, its power-loss model armed), its clock at the cut plus the recovery
    /// time, and clients may connect again.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cut(
        &mut self,
        dev: &mut Device,
        out: &mut Outbox,
        cfg: &SsdConfig,
        opts: &ServeOptions,
        open: &Mutex<Vec<Arc<Open>>>,
        next_conn: &AtomicU32,
        start: Instant,
    ) -> Result<()> {
        let outcome = dev.power_cut().ok_or_else(|| {
            Error::bad_device(Invalid::unnamed(
                "power cut",
                says("the device's power-loss model was not armed"),
            ))
        })?;
        let connections_closed = {
            let open = open.lock().unwrap();
            for c in open.iter() {
                c.stream.shutdown();
            }
            out.dead_below = next_conn.load(Ordering::Relaxed);
            out.conns.len() as u64
        };
        let requests_dropped = (out.pending.len() + out.backlog.len()) as u64;
        out.pending.clear();
        out.backlog.clear();
        out.due.clear();
        out.conns.clear();
        let restored = match (&mut out.journal, &mut out.data) {
            // The store is the user's file (memory cannot fail): an I/O error there (a full
            // disk) is serve's, not a bug.
            (Some(j), Some(data)) => j.restore(data, &outcome).map_err(|e| {
                let why = format!(
                    "putting the data store back to the recovered drive after a power cut: {e}"
                );
                match &opts.data {
                    DataSpec::File(path) => Error::bad_serve(Invalid::option_says(
                        "--data",
                        format!("file:{}", path.display()),
                        why,
                    )),
                    DataSpec::Memory => Error::serve(why),
                }
            })?,
            _ => Restored::default(),
        };
        let log_ended = out.log.is_some();
        if let Some(mut log) = out.log.take() {
            log.note(&format!(
                "power cut at event {} ({} us): the log ends, what follows ran on the recovered drive",
                outcome.result.event, outcome.result.at_us
            ));
            log.finish()?;
        }
        let recovery = SimTime::from_ps((outcome.result.recovery_us * 1e6).round() as u64);
        let mut fresh = Device::new(cfg, opts.seed)?;
        crate::run::precondition(&mut fresh, cfg, opts.seed)?;
        fresh.enable_power_loss("--power-cuts")?;
        fresh.resume_at(dev.now() + recovery);
        *dev = fresh;
        if let Some(j) = &mut out.journal {
            *j = Journal::new(j.unit_bytes, j.size, j.keep_all_bytes);
        }
        let mut record = serde_json::to_value(&outcome.result).expect("plain figures");
        let extra = serde_json::json!({
            "wall_s": start.elapsed().as_secs_f64(),
            "connections_closed": connections_closed,
            "requests_dropped": requests_dropped,
            "store": restored,
            "store_error": out.journal_error.take(),
            "log_ended": log_ended,
        });
        if let (Some(r), serde_json::Value::Object(e)) = (record.as_object_mut(), extra) {
            r.extend(e);
        }
        self.list.push(record);
        self.last = Some(outcome.result);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::data::Pages;

    const UNIT: u64 = 4096;

    fn outcome(recovered: &[(u64, Option<u32>)]) -> PowerCutOutcome {
        PowerCutOutcome {
            result: PowerLossResult::default(),
            recovered: recovered.iter().copied().collect(),
        }
    }

    fn unit_bytes(store: &Data, lpn: u64) -> Vec<u8> {
        let mut b = vec![0u8; UNIT as usize];
        store.read(lpn * UNIT, &mut b).unwrap();
        b
    }

    /// A completed write, as the server does it: journal at submission, store at completion.
    fn write(j: &mut Journal, store: &mut Data, offset: u64, bytes: &[u8]) -> Ticket {
        let t = j
            .write(store, offset, bytes.len() as u64, Some(bytes))
            .unwrap();
        store.write(offset, bytes).unwrap();
        t
    }

    #[test]
    fn a_cut_puts_back_the_version_recovery_finds_and_a_flush_drops_older_ones() {
        let mut store = Data::Memory(Pages::default());
        let mut j = Journal::new(UNIT, 16 * UNIT, 0);
        let a = vec![0xAA; UNIT as usize];
        let b = vec![0xBB; UNIT as usize];
        let t = write(&mut j, &mut store, 0, &a);
        j.completed(t, true);
        let f = j.flush();
        j.completed(f, true);
        // Version 1 is durable and in the store: nothing kept.
        assert_eq!(j.units_held(), 0);
        let t = write(&mut j, &mut store, 0, &b);
        j.completed(t, true);
        // A partial write of unit 1 in flight (never completed: not in the store).
        let t1 = j
            .write(&store, UNIT + 512, 512, Some(&[0xCC; 512]))
            .unwrap();
        assert!(matches!(&t1, Ticket::Update { first: 1, versions } if versions == &[1]));
        assert_eq!(j.units_held(), 2);
        // Recovery lost unit 0's second write and kept unit 1's unfinished one.
        let r = j
            .restore(&mut store, &outcome(&[(0, Some(1)), (1, Some(1))]))
            .unwrap();
        assert_eq!(unit_bytes(&store, 0), a);
        let mut want1 = vec![0u8; UNIT as usize];
        want1[512..1024].fill(0xCC);
        assert_eq!(unit_bytes(&store, 1), want1);
        assert_eq!(
            (r.units_journaled, r.units_restored, r.units_unmatched),
            (2, 2, 0)
        );
        assert_eq!(j.units_held(), 0);
    }

    #[test]
    fn a_unit_the_model_never_saw_change_goes_back_to_its_base_and_trims_read_zeros() {
        let mut store = Data::Memory(Pages::default());
        store.write(2 * UNIT, &[7; UNIT as usize]).unwrap();
        let mut j = Journal::new(UNIT, 16 * UNIT, 0);
        // Units 2 and 3 written, unit 2 then trimmed whole (unit 3's half is not a trim).
        let t = write(&mut j, &mut store, 2 * UNIT, &[9; 2 * UNIT as usize]);
        j.completed(t, true);
        let t = j.trim(&store, 2 * UNIT, UNIT + 100).unwrap();
        assert!(matches!(&t, Ticket::Update { versions, .. } if versions == &[2, 0]));
        store.zero(2 * UNIT, UNIT + 100).unwrap();
        j.completed(t, true);
        // Recovery finds the trim of unit 2 and the write of unit 3.
        let r = j
            .restore(&mut store, &outcome(&[(2, Some(2)), (3, Some(1))]))
            .unwrap();
        assert_eq!(unit_bytes(&store, 2), vec![0; UNIT as usize]);
        // Unit 3: version 1 is the write (the store's partial zeros are not a version); unit 2
        // held zeros already.
        assert_eq!(unit_bytes(&store, 3), vec![9; UNIT as usize]);
        assert_eq!(r.units_restored, 1);
        // A unit the model never saw change: back to its base (zeros, as the trim left it).
        let mut j = Journal::new(UNIT, 16 * UNIT, 0);
        let t = write(&mut j, &mut store, 2 * UNIT, &[1; UNIT as usize]);
        j.completed(t, true);
        j.restore(&mut store, &outcome(&[])).unwrap();
        assert_eq!(unit_bytes(&store, 2), vec![0; UNIT as usize]);
        // A version the journal does not hold is counted, not invented.
        let mut j = Journal::new(UNIT, 16 * UNIT, 0);
        let t = write(&mut j, &mut store, 0, &[1; UNIT as usize]);
        j.completed(t, true);
        let r = j.restore(&mut store, &outcome(&[(0, Some(5))])).unwrap();
        assert_eq!(r.units_unmatched, 1);
    }

    #[test]
    fn under_its_budget_the_journal_keeps_what_a_flush_covered() {
        let mut store = Data::Memory(Pages::default());
        let mut j = Journal::new(UNIT, 4 * UNIT, 2 * UNIT);
        let t = write(&mut j, &mut store, 0, &[1; UNIT as usize]);
        j.completed(t, true);
        let f = j.flush();
        j.completed(f, true);
        // Base and version 1 held (2 units of bytes): nothing dropped.
        assert_eq!(j.units_held(), 1);
        // A drive that lost the flushed write: the store goes back to the base.
        j.restore(&mut store, &outcome(&[(0, Some(0))])).unwrap();
        assert_eq!(unit_bytes(&store, 0), vec![0; UNIT as usize]);
        // Over the budget, a completed FLUSH drops what it covered.
        let t = write(&mut j, &mut store, 0, &[2; UNIT as usize]);
        j.completed(t, true);
        let t = write(&mut j, &mut store, UNIT, &[3; UNIT as usize]);
        j.completed(t, true);
        let f = j.flush();
        j.completed(f, true);
        assert_eq!(j.units_held(), 0);
        assert_eq!(j.held_bytes, 0);
    }

    #[test]
    fn a_flush_keeps_what_a_trim_replaced() {
        let mut store = Data::Memory(Pages::default());
        let mut j = Journal::new(UNIT, 4 * UNIT, 0);
        let t = write(&mut j, &mut store, 0, &[1; UNIT as usize]);
        j.completed(t, true);
        let f = j.flush();
        j.completed(f, true);
        assert_eq!(j.units_held(), 0);
        let t = j.trim(&store, 0, UNIT).unwrap();
        store.zero(0, UNIT).unwrap();
        j.completed(t, true);
        let f = j.flush();
        j.completed(f, true);
        // The trim is not durable until a checkpoint: its predecessor may come back.
        assert_eq!(j.units_held(), 1);
        j.restore(&mut store, &outcome(&[(0, Some(1))])).unwrap();
        assert_eq!(unit_bytes(&store, 0), vec![1; UNIT as usize]);
    }

    #[test]
    fn a_flush_keeps_what_completed_after_it_was_submitted() {
        let mut store = Data::Memory(Pages::default());
        let mut j = Journal::new(UNIT, 4 * UNIT, 0);
        let t1 = write(&mut j, &mut store, 0, &[1; UNIT as usize]);
        j.completed(t1, true);
        let f = j.flush();
        // Version 2 completes while the FLUSH is in flight: not covered by it.
        let t2 = write(&mut j, &mut store, 0, &[2; UNIT as usize]);
        j.completed(t2, true);
        j.completed(f, true);
        assert_eq!(j.units_held(), 1);
        // Recovery may find version 1 (version 2 lost in the cache) ...
        j.restore(&mut store, &outcome(&[(0, Some(1))])).unwrap();
        assert_eq!(unit_bytes(&store, 0), vec![1; UNIT as usize]);
    }
}
