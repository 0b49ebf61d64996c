//! The zone state machine (`ctrl::zones`) against a reference model written apart from it, on
//! random command sequences: every command's status, every zone's state and write pointer,
//! the open and active counts and the reports must agree, and no command may panic.
//!
//! The reference keeps one record per zone and counts by scanning them all; it picks the
//! implicitly opened zone to close by the time each opened (the fast model keeps a queue).
//! Its rules are the NVMe ZNS specification's (NVMe 2.0, Zoned Namespace Command Set):
//! writes at the write pointer and within the capacity; an empty or closed zone opens
//! implicitly on a write and explicitly on Open Zone, taking an active resource if it was
//! empty and an open one always, the controller closing an implicitly opened zone when the open
//! limit is reached; Close, Finish, Reset and Offline as the specification's state diagram has
//! them; select-all applies to the states each action takes; a zone's offline state makes reads
//! of it fail.

use proptest::prelude::*;
use ssdlab::ctrl::zones::{ZoneAction, ZoneState, Zones};
use ssdlab::request::Status;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum S {
    E,
    Io,
    Eo,
    C,
    F,
    Ro,
    O,
}

impl S {
    fn of(s: ZoneState) -> S {
        match s {
            ZoneState::Empty => S::E,
            ZoneState::ImplicitlyOpened => S::Io,
            ZoneState::ExplicitlyOpened => S::Eo,
            ZoneState::Closed => S::C,
            ZoneState::Full => S::F,
            ZoneState::ReadOnly => S::Ro,
            ZoneState::Offline => S::O,
        }
    }
}

#[derive(Clone, Debug)]
struct Zone {
    s: S,
    wp: u64,
    /// When it last opened (the reference's clock).
    opened: u64,
}

struct Reference {
    zl: u64,
    cap: u64,
    mor: u32,
    mar: u32,
    z: Vec<Zone>,
    clock: u64,
}

impl Reference {
    fn open_n(&self) -> u32 {
        self.z
            .iter()
            .filter(|z| matches!(z.s, S::Io | S::Eo))
            .count() as u32
    }

    fn active_n(&self) -> u32 {
        self.z
            .iter()
            .filter(|z| matches!(z.s, S::Io | S::Eo | S::C))
            .count() as u32
    }

    fn open(&mut self, i: usize, to: S) -> Result<(), Status> {
        if self.z[i].s == S::E && self.mar > 0 && self.active_n() >= self.mar {
            return Err(Status::TooManyActiveZones);
        }
        if self.mor > 0 && self.open_n() >= self.mor {
            let victim = (0..self.z.len())
                .filter(|&j| self.z[j].s == S::Io)
                .min_by_key(|&j| self.z[j].opened);
            match victim {
                Some(j) => self.z[j].s = S::C,
                None => return Err(Status::TooManyOpenZones),
            }
        }
        self.clock += 1;
        self.z[i].s = to;
        self.z[i].opened = self.clock;
        Ok(())
    }

    fn write(&mut self, slba: u64, nlb: u64, append: bool) -> Result<u64, Status> {
        let i = (slba / self.zl) as usize;
        if i >= self.z.len() {
            return Err(Status::InvalidField);
        }
        match self.z[i].s {
            S::F => return Err(Status::ZoneFull),
            S::Ro => return Err(Status::ZoneReadOnly),
            S::O => return Err(Status::ZoneOffline),
            _ => {}
        }
        let start = i as u64 * self.zl;
        if append {
            if slba != start {
                return Err(Status::InvalidField);
            }
        } else if slba != start + self.z[i].wp {
            return Err(Status::ZoneInvalidWrite);
        }
        if nlb == 0 || self.z[i].wp + nlb > self.cap {
            return Err(Status::ZoneBoundary);
        }
        if matches!(self.z[i].s, S::E | S::C) {
            self.open(i, S::Io)?;
        }
        let at = start + self.z[i].wp;
        self.z[i].wp += nlb;
        if self.z[i].wp == self.cap {
            self.z[i].s = S::F;
        }
        Ok(at)
    }

    fn one(&mut self, a: ZoneAction, i: usize) -> Result<(), Status> {
        let s = self.z[i].s;
        let bad = Err(Status::ZoneInvalidTransition);
        match a {
            ZoneAction::Open => match s {
                S::E | S::C => self.open(i, S::Eo)?,
                S::Io | S::Eo => self.z[i].s = S::Eo,
                _ => return bad,
            },
            ZoneAction::Close => match s {
                S::Io | S::Eo | S::C => self.z[i].s = S::C,
                _ => return bad,
            },
            ZoneAction::Finish => match s {
                S::E | S::Io | S::Eo | S::C | S::F => {
                    self.z[i].s = S::F;
                    self.z[i].wp = self.cap;
                }
                _ => return bad,
            },
            ZoneAction::Reset => match s {
                S::E | S::Io | S::Eo | S::C | S::F => {
                    self.z[i].s = S::E;
                    self.z[i].wp = 0;
                }
                _ => return bad,
            },
            ZoneAction::Offline => match s {
                S::Ro | S::O => {
                    self.z[i].s = S::O;
                    self.z[i].wp = 0;
                }
                _ => return bad,
            },
        }
        Ok(())
    }

    fn action(&mut self, a: ZoneAction, slba: u64, all: bool) -> Result<(), Status> {
        if all {
            let takes = |s: S| match a {
                ZoneAction::Open => s == S::C,
                ZoneAction::Close => matches!(s, S::Io | S::Eo),
                ZoneAction::Finish => matches!(s, S::Io | S::Eo | S::C),
                ZoneAction::Reset => matches!(s, S::Io | S::Eo | S::C | S::F),
                ZoneAction::Offline => s == S::Ro,
            };
            let picked: Vec<usize> = (0..self.z.len()).filter(|&i| takes(self.z[i].s)).collect();
            if a == ZoneAction::Open
                && self.mor > 0
                && self.open_n() as usize + picked.len() > self.mor as usize
            {
                return Err(Status::TooManyOpenZones);
            }
            for i in picked {
                self.one(a, i).unwrap();
            }
            return Ok(());
        }
        let i = (slba / self.zl) as usize;
        if i >= self.z.len() || !slba.is_multiple_of(self.zl) {
            return Err(Status::InvalidField);
        }
        self.one(a, i)
    }
}

#[derive(Clone, Debug)]
enum Cmd {
    /// A write at the zone's write pointer plus `skew` (0: at it).
    Write {
        zone: usize,
        skew: u64,
        nlb: u64,
    },
    Append {
        zone: usize,
        off: u64,
        nlb: u64,
    },
    Action {
        a: usize,
        zone: usize,
        off: u64,
        all: bool,
    },
    ReadOnly {
        zone: usize,
    },
    Read {
        lba: u64,
        nlb: u64,
    },
    Report {
        zone: usize,
        filter: u8,
        partial: bool,
        max: usize,
    },
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        6 => (0..8usize, prop_oneof![4 => Just(0u64), 1 => 0..4u64], 0..5u64)
            .prop_map(|(zone, skew, nlb)| Cmd::Write { zone, skew, nlb }),
        2 => (0..8usize, prop_oneof![4 => Just(0u64), 1 => 0..3u64], 1..4u64)
            .prop_map(|(zone, off, nlb)| Cmd::Append { zone, off, nlb }),
        5 => (0..5usize, 0..8usize, prop_oneof![5 => Just(0u64), 1 => 1..3u64], any::<bool>())
            .prop_map(|(a, zone, off, all)| Cmd::Action { a, zone, off, all }),
        1 => (0..8usize).prop_map(|zone| Cmd::ReadOnly { zone }),
        1 => (0..80u64, 1..12u64).prop_map(|(lba, nlb)| Cmd::Read { lba, nlb }),
        1 => (0..8usize, 0..9u8, any::<bool>(), 0..6usize)
            .prop_map(|(zone, filter, partial, max)| Cmd::Report { zone, filter, partial, max }),
    ]
}

/// (zones, LBAs per zone, capacity, max open, max active): limits as a valid config has them.
fn shape() -> impl Strategy<Value = (u32, u64, u64, u32, u32)> {
    (1..7u32, 1..9u64, 0..3u32, 0..5u32).prop_flat_map(|(zones, zl, mor, extra)| {
        (Just(zones), Just(zl), 1..=zl, Just(mor), any::<bool>()).prop_map(
            move |(zones, zl, cap, mor, limit_active)| {
                let mar = if limit_active && mor > 0 {
                    mor + extra
                } else {
                    0
                };
                (zones, zl, cap, mor, mar)
            },
        )
    })
}

fn check_same(fast: &Zones, r: &Reference) -> Result<(), TestCaseError> {
    for (i, z) in r.z.iter().enumerate() {
        prop_assert_eq!(S::of(fast.state(i as u32)), z.s, "zone {} state", i);
        prop_assert_eq!(fast.wp(i as u32), z.wp, "zone {} write pointer", i);
    }
    prop_assert_eq!(fast.open_zones(), r.open_n());
    prop_assert_eq!(fast.active_zones(), r.active_n());
    if r.mor > 0 {
        prop_assert!(fast.open_zones() <= r.mor);
    }
    if r.mar > 0 {
        prop_assert!(fast.active_zones() <= r.mar);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn the_zone_state_machine_follows_the_reference(
        (zones, zl, cap, mor, mar) in shape(),
        cmds in prop::collection::vec(cmd(), 1..80),
    ) {
        let mut fast = Zones::new(zones, zl, cap, mor, mar);
        let mut r = Reference {
            zl,
            cap,
            mor,
            mar,
            z: vec![Zone { s: S::E, wp: 0, opened: 0 }; zones as usize],
            clock: 0,
        };
        let n = zones as usize;
        for c in cmds {
            match c {
                Cmd::Write { zone, skew, nlb } => {
                    let zone = zone % n;
                    let slba = zone as u64 * zl + r.z[zone].wp + skew;
                    let got = fast.write(slba, nlb);
                    let want = r.write(slba, nlb, false).map(|_| ());
                    prop_assert_eq!(got, want, "write {} +{}", slba, nlb);
                }
                Cmd::Append { zone, off, nlb } => {
                    let slba = (zone % n) as u64 * zl + off;
                    prop_assert_eq!(fast.append(slba, nlb), r.write(slba, nlb, true));
                }
                Cmd::Action { a, zone, off, all } => {
                    let a = ZoneAction::ALL[a];
                    let slba = (zone % n) as u64 * zl + off;
                    let got = fast.manage(a, slba, all).map(|_| ());
                    prop_assert_eq!(got, r.action(a, slba, all), "{:?} {} all={}", a, slba, all);
                }
                Cmd::ReadOnly { zone } => {
                    let zone = zone % n;
                    fast.make_read_only(zone as u32);
                    if r.z[zone].s != S::O {
                        r.z[zone].s = S::Ro;
                    }
                }
                Cmd::Read { lba, nlb } => {
                    let end = zones as u64 * zl;
                    let got = fast.read(lba, nlb);
                    let want = if lba + nlb > end {
                        Err(Status::InvalidField)
                    } else if (lba / zl..=(lba + nlb - 1) / zl)
                        .any(|z| r.z[z as usize].s == S::O)
                    {
                        Err(Status::ZoneOffline)
                    } else {
                        Ok(())
                    };
                    prop_assert_eq!(got, want, "read {} +{}", lba, nlb);
                }
                Cmd::Report { zone, filter, partial, max } => {
                    let slba = (zone % n) as u64 * zl;
                    let Ok(f) = ZoneState::of_report_option(filter) else {
                        prop_assert!(filter > 7);
                        continue;
                    };
                    let rep = fast.report(slba, f, partial, max).unwrap();
                    let matching: Vec<usize> = (zone % n..n)
                        .filter(|&i| f.is_none_or_state(r.z[i].s))
                        .collect();
                    let shown = matching.len().min(max);
                    let want_nr = if partial { shown } else { matching.len() };
                    prop_assert_eq!(rep.nr_zones, want_nr as u64);
                    prop_assert_eq!(rep.zones.len(), shown);
                    for (d, &i) in rep.zones.iter().zip(&matching) {
                        prop_assert_eq!(d.zslba, i as u64 * zl);
                        prop_assert_eq!(d.zcap, cap);
                        prop_assert_eq!(d.wp, i as u64 * zl + r.z[i].wp);
                        prop_assert_eq!(S::of(d.state), r.z[i].s);
                    }
                }
            }
            check_same(&fast, &r)?;
        }
    }
}

trait Filter {
    fn is_none_or_state(&self, s: S) -> bool;
}

impl Filter for Option<ZoneState> {
    fn is_none_or_state(&self, s: S) -> bool {
        self.is_none_or(|f| S::of(f) == s)
    }
}

/// Every host command on every state of a zone, with and without room: a status, never a
/// panic (the reference's statuses checked by the property above; here, that none panics on
/// the edges: the last zone, LBAs beyond the namespace, zero lengths).
#[test]
fn no_command_panics_at_the_edges() {
    let mut z = Zones::new(3, 4, 4, 1, 1);
    let end = 12u64;
    for lba in [0, 3, 4, 11, 12, 13, u64::MAX / 2, u64::MAX] {
        for nlb in [0, 1, 4, 5, u64::MAX] {
            let _ = z.write(lba, nlb);
            let _ = z.append(lba, nlb);
            let _ = z.read(lba, nlb);
        }
        for a in ZoneAction::ALL {
            let _ = z.manage(a, lba, false);
        }
        let _ = z.report(lba, None, true, 10);
    }
    assert_eq!(z.report(end, None, false, 1), Err(Status::InvalidField));
}
