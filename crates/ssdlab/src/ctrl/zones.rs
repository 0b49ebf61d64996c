//! The zone state machine of the NVMe Zoned Namespace Command Set (NVMe 2.0, "ZNS"): pure
//! logic, no timing and no media. Addresses are logical blocks (LBAs), zone-relative where the
//! name says so.
//!
//! Each zone has a state and a write pointer. Writes go at the write pointer only and take an
//! empty or closed zone to implicitly opened; the Zone Management Send actions open, close,
//! finish, reset and offline a zone (or, with select-all, every zone in the states an action
//! applies to); Zone Management Receive reports zones, filtered by state. Open and active zones
//! are counted against the drive's limits (MOR, MAR): an open zone is active too. When a zone
//! must open and the open limit is reached, the controller closes the implicitly opened zone
//! opened longest ago, if there is one (the specification allows it; QEMU's emulation does the
//! same, `auto_transition_zones`); an explicitly opened zone is never closed for it.
//!
//! Every error a host can provoke is a [`Status`] with the specification's meaning: the
//! command-specific status codes B8h–BFh of the ZNS command set, and Invalid Field for a
//! management command or append whose LBA is not a zone's first. Nothing here panics on a
//! command: the device checks that the LBAs are within the namespace before (the request's
//! range check), and the methods here check again.

use crate::request::Status;
use crate::sim::divisor::Divisor;
use std::collections::VecDeque;

/// A zone's state (ZNS, "Zone State"), with the Zone State field's code of a zone descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ZoneState {
    /// ZSE: nothing written, no resources held.
    Empty,
    /// ZSIO: opened by a write.
    ImplicitlyOpened,
    /// ZSEO: opened by an Open Zone command.
    ExplicitlyOpened,
    /// ZSC: written in part, active but not open.
    Closed,
    /// ZSF: written to its capacity, or finished.
    Full,
    /// ZSRO: the device made it read-only (a media fault); the host may only read it or take
    /// it offline.
    ReadOnly,
    /// ZSO: no longer readable or writable.
    Offline,
}

impl ZoneState {
    pub const ALL: [ZoneState; 7] = [
        ZoneState::Empty,
        ZoneState::ImplicitlyOpened,
        ZoneState::ExplicitlyOpened,
        ZoneState::Closed,
        ZoneState::Full,
        ZoneState::ReadOnly,
        ZoneState::Offline,
    ];

    /// The Zone State field of a zone descriptor (ZNS, Zone Descriptor Data Structure).
    pub fn code(self) -> u8 {
        match self {
            ZoneState::Empty => 0x1,
            ZoneState::ImplicitlyOpened => 0x2,
            ZoneState::ExplicitlyOpened => 0x3,
            ZoneState::Closed => 0x4,
            ZoneState::ReadOnly => 0xd,
            ZoneState::Full => 0xe,
            ZoneState::Offline => 0xf,
        }
    }

    /// The Zone Receive Action Specific field that reports only this state (1–7; 0 reports
    /// all).
    pub fn report_option(self) -> u8 {
        match self {
            ZoneState::Empty => 1,
            ZoneState::ImplicitlyOpened => 2,
            ZoneState::ExplicitlyOpened => 3,
            ZoneState::Closed => 4,
            ZoneState::Full => 5,
            ZoneState::ReadOnly => 6,
            ZoneState::Offline => 7,
        }
    }

    /// The state a Zone Receive Action Specific field reports: Ok(None) for all zones (0).
    pub fn of_report_option(v: u8) -> Result<Option<ZoneState>, Status> {
        match v {
            0 => Ok(None),
            1..=7 => Ok(Some(ZoneState::ALL[v as usize - 1])),
            _ => Err(Status::InvalidField),
        }
    }

    /// The name nvme-cli's `zns report-zones` prints for the state.
    pub fn name(self) -> &'static str {
        match self {
            ZoneState::Empty => "EMPTY",
            ZoneState::ImplicitlyOpened => "IMP_OPENED",
            ZoneState::ExplicitlyOpened => "EXP_OPENED",
            ZoneState::Closed => "CLOSED",
            ZoneState::Full => "FULL",
            ZoneState::ReadOnly => "READONLY",
            ZoneState::Offline => "OFFLINE",
        }
    }

    fn is_open(self) -> bool {
        matches!(
            self,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        )
    }

    fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// A Zone Management Send action (ZNS, Zone Send Action field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneAction {
    Close,
    Finish,
    Open,
    Reset,
    Offline,
}

impl ZoneAction {
    pub const ALL: [ZoneAction; 5] = [
        ZoneAction::Close,
        ZoneAction::Finish,
        ZoneAction::Open,
        ZoneAction::Reset,
        ZoneAction::Offline,
    ];

    /// The Zone Send Action field's value.
    pub fn code(self) -> u8 {
        match self {
            ZoneAction::Close => 0x1,
            ZoneAction::Finish => 0x2,
            ZoneAction::Open => 0x3,
            ZoneAction::Reset => 0x4,
            ZoneAction::Offline => 0x5,
        }
    }

    pub fn of_code(v: u8) -> Option<ZoneAction> {
        ZoneAction::ALL.into_iter().find(|a| a.code() == v)
    }

    /// The request op that asks for this action.
    pub fn op(self) -> crate::request::Op {
        use crate::request::Op;
        match self {
            ZoneAction::Close => Op::ZoneClose,
            ZoneAction::Finish => Op::ZoneFinish,
            ZoneAction::Open => Op::ZoneOpen,
            ZoneAction::Reset => Op::ZoneReset,
            ZoneAction::Offline => Op::ZoneOffline,
        }
    }

    /// The action a request's op asks for (the zone management ops of `request::Op`).
    pub fn of_op(op: crate::request::Op) -> Option<ZoneAction> {
        use crate::request::Op;
        match op {
            Op::ZoneClose => Some(ZoneAction::Close),
            Op::ZoneFinish => Some(ZoneAction::Finish),
            Op::ZoneOpen => Some(ZoneAction::Open),
            Op::ZoneReset => Some(ZoneAction::Reset),
            Op::ZoneOffline => Some(ZoneAction::Offline),
            _ => None,
        }
    }

    /// Whether a select-all command of this action takes a zone in state `s` (ZNS: open all
    /// takes the closed zones, close all the open ones, finish all the open and closed ones,
    /// reset all the open, closed and full ones, offline all the read-only ones).
    fn selects(self, s: ZoneState) -> bool {
        match self {
            ZoneAction::Open => s == ZoneState::Closed,
            ZoneAction::Close => s.is_open(),
            ZoneAction::Finish => s.is_active(),
            ZoneAction::Reset => s.is_active() || s == ZoneState::Full,
            ZoneAction::Offline => s == ZoneState::ReadOnly,
        }
    }
}

/// One zone as Zone Management Receive reports it (a zone descriptor's fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneDescriptor {
    /// Zone Start LBA.
    pub zslba: u64,
    /// Zone Capacity, in LBAs.
    pub zcap: u64,
    /// Write Pointer (an LBA). A finished zone's is its start plus its capacity, an offline
    /// zone's its start (the specification leaves both undefined; these are the model's).
    pub wp: u64,
    pub state: ZoneState,
}

/// A Report Zones answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneReport {
    /// Number of Zones: with the partial flag, the descriptors returned; without, every zone
    /// from the first one asked for that matches the filter.
    pub nr_zones: u64,
    pub zones: Vec<ZoneDescriptor>,
}

/// A zone an action changed, and its write pointer (zone-relative) before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Changed {
    pub zone: u32,
    pub old_wp: u64,
    pub old_state: ZoneState,
}

/// What the state machine counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounters {
    /// Zones reset that held data or resources (a reset of an empty zone changes nothing).
    pub resets: u64,
    /// Zones finished by a Finish Zone command (not those that filled by writes).
    pub finishes: u64,
    /// Transitions into an opened state (implicit or explicit).
    pub opens: u64,
    /// Implicitly opened zones the controller closed to open another.
    pub implicit_closes: u64,
    /// The most zones open at once.
    pub max_open: u32,
    /// The most zones active at once.
    pub max_active: u32,
}

/// Every zone's state and write pointer, with the open and active counts.
#[derive(Clone, Debug)]
pub struct Zones {
    zone_lbas: u64,
    /// Division by `zone_lbas` (a shift for the usual power-of-two zone).
    zone_div: Divisor,
    cap_lbas: u64,
    /// 0: no limit.
    max_open: u32,
    max_active: u32,
    state: Vec<ZoneState>,
    /// Zone-relative write pointers.
    wp: Vec<u64>,
    open: u32,
    active: u32,
    /// The implicitly opened zones, longest open first (the controller closes the first when
    /// it needs an open resource).
    implicit: VecDeque<u32>,
    pub counters: ZoneCounters,
}

impl Zones {
    /// `zones` empty zones of `zone_lbas` LBAs, of which `cap_lbas` are writable (at least 1,
    /// at most `zone_lbas`), with the open and active limits (0: no limit).
    pub fn new(zones: u32, zone_lbas: u64, cap_lbas: u64, max_open: u32, max_active: u32) -> Zones {
        assert!(cap_lbas >= 1 && cap_lbas <= zone_lbas, "a validated config");
        Zones {
            zone_lbas,
            zone_div: Divisor::new(zone_lbas),
            cap_lbas,
            max_open,
            max_active,
            state: vec![ZoneState::Empty; zones as usize],
            wp: vec![0; zones as usize],
            open: 0,
            active: 0,
            implicit: VecDeque::new(),
            counters: ZoneCounters::default(),
        }
    }

    pub fn count(&self) -> u32 {
        self.state.len() as u32
    }

    pub fn zone_lbas(&self) -> u64 {
        self.zone_lbas
    }

    /// `(zone, offset in it)` of `lba` (the zone may lie past the namespace).
    #[inline]
    pub fn split(&self, lba: u64) -> (u64, u64) {
        self.zone_div.divmod(lba)
    }

    /// The open zone limit (MOR as a count; 0: no limit).
    pub fn max_open(&self) -> u32 {
        self.max_open
    }

    /// The active zone limit (MAR as a count; 0: no limit).
    pub fn max_active(&self) -> u32 {
        self.max_active
    }

    pub fn cap_lbas(&self) -> u64 {
        self.cap_lbas
    }

    pub fn state(&self, zone: u32) -> ZoneState {
        self.state[zone as usize]
    }

    /// Zone-relative write pointer.
    pub fn wp(&self, zone: u32) -> u64 {
        self.wp[zone as usize]
    }

    pub fn open_zones(&self) -> u32 {
        self.open
    }

    pub fn active_zones(&self) -> u32 {
        self.active
    }

    /// The zone of `lba`, if it is in the namespace.
    pub fn zone_of(&self, lba: u64) -> Option<u32> {
        let z = self.zone_div.divmod(lba).0;
        (z < self.state.len() as u64).then_some(z as u32)
    }

    pub fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        let zslba = zone as u64 * self.zone_lbas;
        ZoneDescriptor {
            zslba,
            zcap: self.cap_lbas,
            wp: zslba + self.wp[zone as usize],
            state: self.state[zone as usize],
        }
    }

    fn set(&mut self, zone: u32, to: ZoneState) {
        let from = self.state[zone as usize];
        if from == to {
            return;
        }
        if from.is_open() {
            self.open -= 1;
        }
        if from.is_active() {
            self.active -= 1;
        }
        if from == ZoneState::ImplicitlyOpened {
            self.implicit.retain(|&z| z != zone);
        }
        if to.is_open() {
            self.open += 1;
            self.counters.opens += 1;
        }
        if to.is_active() {
            self.active += 1;
        }
        if to == ZoneState::ImplicitlyOpened {
            self.implicit.push_back(zone);
        }
        self.counters.max_open = self.counters.max_open.max(self.open);
        self.counters.max_active = self.counters.max_active.max(self.active);
        self.state[zone as usize] = to;
    }

    /// Make room to open `zone` (empty or closed): an active resource if it is empty, an open
    /// one always, closing the implicitly opened zone opened longest ago if the open limit is
    /// reached. Checks before it changes anything.
    fn take_open(&mut self, zone: u32) -> Result<(), Status> {
        let s = self.state[zone as usize];
        if s == ZoneState::Empty && self.max_active != 0 && self.active >= self.max_active {
            return Err(Status::TooManyActiveZones);
        }
        if self.max_open != 0 && self.open >= self.max_open {
            let Some(&victim) = self.implicit.front() else {
                return Err(Status::TooManyOpenZones);
            };
            self.set(victim, ZoneState::Closed);
            self.counters.implicit_closes += 1;
        }
        Ok(())
    }

    /// The checks a write or append makes of its zone's state.
    fn writable(&self, zone: u32) -> Result<(), Status> {
        match self.state[zone as usize] {
            ZoneState::Full => Err(Status::ZoneFull),
            ZoneState::ReadOnly => Err(Status::ZoneReadOnly),
            ZoneState::Offline => Err(Status::ZoneOffline),
            _ => Ok(()),
        }
    }

    /// Take `nlb` LBAs at the write pointer of `zone`, which is writable and has room: open it
    /// if needed, move the pointer, fill it when it reaches its capacity.
    fn advance(&mut self, zone: u32, nlb: u64) -> Result<(), Status> {
        let s = self.state[zone as usize];
        if matches!(s, ZoneState::Empty | ZoneState::Closed) {
            self.take_open(zone)?;
            self.set(zone, ZoneState::ImplicitlyOpened);
        }
        let wp = &mut self.wp[zone as usize];
        *wp += nlb;
        if *wp == self.cap_lbas {
            self.set(zone, ZoneState::Full);
        }
        Ok(())
    }

    /// A Write of `nlb` LBAs at `slba`: the zone's write pointer moves on, or the command fails
    /// and nothing changes.
    pub fn write(&mut self, slba: u64, nlb: u64) -> Result<(), Status> {
        let zone = self.zone_of(slba).ok_or(Status::InvalidField)?;
        self.writable(zone)?;
        let zslba = zone as u64 * self.zone_lbas;
        if slba != zslba + self.wp[zone as usize] {
            return Err(Status::ZoneInvalidWrite);
        }
        if !self.fits(zone, nlb) {
            return Err(Status::ZoneBoundary);
        }
        self.advance(zone, nlb)
    }

    /// Whether `nlb` LBAs fit between the write pointer of `zone` and its capacity.
    fn fits(&self, zone: u32, nlb: u64) -> bool {
        nlb != 0 && nlb <= self.cap_lbas - self.wp[zone as usize]
    }

    /// A Zone Append of `nlb` LBAs to the zone that starts at `zslba`: the LBA it was written
    /// at, or the command fails and nothing changes.
    pub fn append(&mut self, zslba: u64, nlb: u64) -> Result<u64, Status> {
        let zone = self.zone_of(zslba).ok_or(Status::InvalidField)?;
        self.writable(zone)?;
        if zslba != zone as u64 * self.zone_lbas {
            return Err(Status::InvalidField);
        }
        let at = zslba + self.wp[zone as usize];
        if !self.fits(zone, nlb) {
            return Err(Status::ZoneBoundary);
        }
        self.advance(zone, nlb)?;
        Ok(at)
    }

    /// A Read of `nlb` LBAs at `slba`: refused if any zone it touches is offline (reads may
    /// cross zone boundaries: Read Across Zone Boundaries is supported).
    pub fn read(&self, slba: u64, nlb: u64) -> Result<(), Status> {
        let last = slba
            .checked_add(nlb.max(1) - 1)
            .ok_or(Status::InvalidField)?;
        let (first, last) = (
            self.zone_of(slba).ok_or(Status::InvalidField)?,
            self.zone_of(last).ok_or(Status::InvalidField)?,
        );
        if (first..=last).any(|z| self.state[z as usize] == ZoneState::Offline) {
            return Err(Status::ZoneOffline);
        }
        Ok(())
    }

    /// Whether `lba` is below its zone's write pointer (it was written, or its zone finished).
    /// Read-only zones keep their pointer; offline zones read nothing.
    pub fn below_wp(&self, lba: u64) -> bool {
        match self.zone_of(lba) {
            Some(z) => self.split(lba).1 < self.wp[z as usize],
            None => false,
        }
    }

    /// A Zone Management Send of `action` on the zone that starts at `zslba`, or with
    /// `select_all` on every zone in the states the action takes (`zslba` ignored): the zones
    /// it changed, or the command fails and nothing changes.
    pub fn manage(
        &mut self,
        action: ZoneAction,
        zslba: u64,
        select_all: bool,
    ) -> Result<Vec<Changed>, Status> {
        if select_all {
            return self.manage_all(action);
        }
        let zone = self.zone_of(zslba).ok_or(Status::InvalidField)?;
        if zslba != zone as u64 * self.zone_lbas {
            return Err(Status::InvalidField);
        }
        let before = Changed {
            zone,
            old_wp: self.wp[zone as usize],
            old_state: self.state[zone as usize],
        };
        self.apply(action, zone)?;
        let changed = self.state[zone as usize] != before.old_state;
        Ok(if changed { vec![before] } else { Vec::new() })
    }

    fn manage_all(&mut self, action: ZoneAction) -> Result<Vec<Changed>, Status> {
        let picked: Vec<u32> = (0..self.count())
            .filter(|&z| action.selects(self.state[z as usize]))
            .collect();
        if action == ZoneAction::Open && self.max_open != 0 {
            // All or nothing: the closed zones must all fit under the open limit (and they are
            // active already). No implicitly opened zone is closed for them.
            if self.open as u64 + picked.len() as u64 > self.max_open as u64 {
                return Err(Status::TooManyOpenZones);
            }
        }
        let mut out = Vec::with_capacity(picked.len());
        for z in picked {
            let c = Changed {
                zone: z,
                old_wp: self.wp[z as usize],
                old_state: self.state[z as usize],
            };
            self.apply(action, z)
                .expect("a select-all action takes only zones it applies to");
            out.push(c);
        }
        Ok(out)
    }

    /// One zone's transition under `action`.
    fn apply(&mut self, action: ZoneAction, zone: u32) -> Result<(), Status> {
        use ZoneState::*;
        let s = self.state[zone as usize];
        match (action, s) {
            (ZoneAction::Open, Empty | Closed) => {
                self.take_open(zone)?;
                self.set(zone, ExplicitlyOpened);
            }
            (ZoneAction::Open, ImplicitlyOpened | ExplicitlyOpened) => {
                self.set(zone, ExplicitlyOpened)
            }
            (ZoneAction::Close, ImplicitlyOpened | ExplicitlyOpened) => self.set(zone, Closed),
            (ZoneAction::Close, Closed) => {}
            (ZoneAction::Finish, Empty | ImplicitlyOpened | ExplicitlyOpened | Closed) => {
                self.wp[zone as usize] = self.cap_lbas;
                self.set(zone, Full);
                self.counters.finishes += 1;
            }
            (ZoneAction::Finish, Full) => {}
            (ZoneAction::Reset, ImplicitlyOpened | ExplicitlyOpened | Closed | Full) => {
                self.wp[zone as usize] = 0;
                self.set(zone, Empty);
                self.counters.resets += 1;
            }
            (ZoneAction::Reset, Empty) => {}
            (ZoneAction::Offline, ReadOnly) => {
                self.wp[zone as usize] = 0;
                self.set(zone, Offline);
            }
            (ZoneAction::Offline, Offline) => {}
            _ => return Err(Status::ZoneInvalidTransition),
        }
        Ok(())
    }

    /// The device makes `zone` read-only (a media fault; no host command does): it gives up
    /// its resources and keeps its data and write pointer. An offline zone stays offline.
    pub fn make_read_only(&mut self, zone: u32) {
        if self.state[zone as usize] != ZoneState::Offline {
            self.set(zone, ZoneState::ReadOnly);
        }
    }

    /// The device takes `zone` offline (its media wore out; no host command does): it gives up
    /// its resources and its data, and is neither read nor written again.
    pub fn make_offline(&mut self, zone: u32) {
        self.wp[zone as usize] = 0;
        self.set(zone, ZoneState::Offline);
    }

    /// Zones in state `s`.
    pub fn count_in(&self, s: ZoneState) -> u32 {
        self.state.iter().filter(|&&x| x == s).count() as u32
    }

    /// A Report Zones from the zone of `slba`, of the zones in state `filter` (None: all), at
    /// most `max` descriptors (the host's buffer); `partial` sets what Number of Zones counts.
    pub fn report(
        &self,
        slba: u64,
        filter: Option<ZoneState>,
        partial: bool,
        max: usize,
    ) -> Result<ZoneReport, Status> {
        let first = self.zone_of(slba).ok_or(Status::InvalidField)?;
        let matching =
            (first..self.count()).filter(|&z| filter.is_none_or(|f| self.state[z as usize] == f));
        let mut zones = Vec::new();
        let mut total = 0u64;
        for z in matching {
            total += 1;
            if zones.len() < max {
                zones.push(self.descriptor(z));
            } else if partial {
                break;
            }
        }
        Ok(ZoneReport {
            nr_zones: if partial { zones.len() as u64 } else { total },
            zones,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(max_open: u32, max_active: u32) -> Zones {
        // 8 zones of 16 LBAs, 12 writable.
        Zones::new(8, 16, 12, max_open, max_active)
    }

    #[test]
    fn writes_go_at_the_write_pointer_and_fill_the_zone() {
        let mut z = zones(0, 0);
        assert_eq!(z.write(0, 4), Ok(()));
        assert_eq!(z.state(0), ZoneState::ImplicitlyOpened);
        assert_eq!(z.write(0, 4), Err(Status::ZoneInvalidWrite));
        assert_eq!(z.write(8, 1), Err(Status::ZoneInvalidWrite));
        assert_eq!(
            z.write(4, 9),
            Err(Status::ZoneBoundary),
            "beyond the capacity"
        );
        assert_eq!(z.write(4, 8), Ok(()));
        assert_eq!(z.state(0), ZoneState::Full);
        assert_eq!(z.write(12, 1), Err(Status::ZoneFull));
        assert_eq!((z.open_zones(), z.active_zones()), (0, 0));
    }

    #[test]
    fn append_returns_the_lba_written_and_needs_the_zone_start() {
        let mut z = zones(0, 0);
        assert_eq!(z.append(16, 3), Ok(16));
        assert_eq!(z.append(16, 2), Ok(19));
        assert_eq!(z.append(17, 1), Err(Status::InvalidField));
        assert_eq!(z.wp(1), 5);
    }

    #[test]
    fn the_open_limit_closes_the_oldest_implicitly_opened_zone() {
        let mut z = zones(2, 3);
        z.write(0, 1).unwrap();
        z.write(16, 1).unwrap();
        z.write(32, 1).unwrap();
        assert_eq!(z.state(0), ZoneState::Closed, "the oldest implicit open");
        assert_eq!(z.counters.implicit_closes, 1);
        // Three active: a fourth zone cannot open.
        assert_eq!(z.write(48, 1), Err(Status::TooManyActiveZones));
        // Explicitly opened zones are never closed for another.
        z.manage(ZoneAction::Open, 16, false).unwrap();
        z.manage(ZoneAction::Open, 32, false).unwrap();
        assert_eq!(z.write(1, 1), Err(Status::TooManyOpenZones));
        assert_eq!(z.state(0), ZoneState::Closed);
    }

    #[test]
    fn invalid_transitions_are_refused() {
        let mut z = zones(0, 0);
        assert_eq!(
            z.manage(ZoneAction::Close, 0, false),
            Err(Status::ZoneInvalidTransition)
        );
        assert_eq!(
            z.manage(ZoneAction::Offline, 0, false),
            Err(Status::ZoneInvalidTransition)
        );
        z.manage(ZoneAction::Finish, 0, false).unwrap();
        assert_eq!(
            z.manage(ZoneAction::Open, 0, false),
            Err(Status::ZoneInvalidTransition)
        );
        assert_eq!(
            z.manage(ZoneAction::Reset, 1, false),
            Err(Status::InvalidField)
        );
        z.make_read_only(2);
        assert_eq!(z.write(32, 1), Err(Status::ZoneReadOnly));
        assert_eq!(z.manage(ZoneAction::Offline, 32, false).unwrap().len(), 1);
        assert_eq!(z.read(30, 4), Err(Status::ZoneOffline));
        assert_eq!(z.write(32, 1), Err(Status::ZoneOffline));
    }

    #[test]
    fn report_filters_and_counts() {
        let mut z = zones(0, 0);
        z.write(16, 2).unwrap();
        z.write(48, 2).unwrap();
        let r = z
            .report(0, Some(ZoneState::ImplicitlyOpened), false, 1)
            .unwrap();
        assert_eq!(r.nr_zones, 2);
        assert_eq!(r.zones.len(), 1);
        assert_eq!(r.zones[0].wp, 18);
        let r = z
            .report(0, Some(ZoneState::ImplicitlyOpened), true, 1)
            .unwrap();
        assert_eq!(r.nr_zones, 1);
        let r = z.report(20, None, false, 100).unwrap();
        assert_eq!(r.nr_zones, 7, "from the zone of the LBA given");
    }
}
