//! What crosses the device boundary: a request in, a completion out; and the command, the unit
//! the host interface and the controller work on (a request split at the transfer limit).

use crate::sim::SimTime;
use serde::{Deserialize, Serialize};

/// What a request or command asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    Trim,
    /// Flush the volatile write cache: no data; from traces only.
    Flush,
    /// Erase whole blocks of a raw device (`ftl.kind = "none"`): no data; from drivers only.
    Erase,
    /// Zoned drive: Zone Append of the request's data to the zone that starts at its offset;
    /// the device writes it at the zone's write pointer.
    Append,
    /// Zoned drive, Zone Management Send (no data; the offset is the zone's start, or any with
    /// `Flags::ALL_ZONES`): reset the zone (its blocks are erased).
    #[serde(rename = "zone_reset")]
    ZoneReset,
    /// Finish the zone: it becomes full (`zns.finish` says what that costs).
    #[serde(rename = "zone_finish")]
    ZoneFinish,
    /// Open the zone explicitly.
    #[serde(rename = "zone_open")]
    ZoneOpen,
    /// Close the zone.
    #[serde(rename = "zone_close")]
    ZoneClose,
    /// Take a read-only zone offline.
    #[serde(rename = "zone_offline")]
    ZoneOffline,
}

impl Op {
    pub fn index(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Flush => 3,
            Op::Erase => 4,
            Op::Append => 5,
            Op::ZoneReset => 6,
            Op::ZoneFinish => 7,
            Op::ZoneOpen => 8,
            Op::ZoneClose => 9,
            Op::ZoneOffline => 10,
        }
    }
    pub const ALL: [Op; 11] = [
        Op::Read,
        Op::Write,
        Op::Trim,
        Op::Flush,
        Op::Erase,
        Op::Append,
        Op::ZoneReset,
        Op::ZoneFinish,
        Op::ZoneOpen,
        Op::ZoneClose,
        Op::ZoneOffline,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => "flush",
            Op::Erase => "erase",
            Op::Append => "append",
            Op::ZoneReset => "zone_reset",
            Op::ZoneFinish => "zone_finish",
            Op::ZoneOpen => "zone_open",
            Op::ZoneClose => "zone_close",
            Op::ZoneOffline => "zone_offline",
        }
    }

    /// Trims, flushes, erases and zone management carry no data: one command each, whatever
    /// their length.
    #[inline]
    pub fn moves_no_data(self) -> bool {
        // Reads and writes are tested first: one compare on the common path.
        !matches!(self, Op::Read | Op::Write) && self != Op::Append
    }

    /// A zone management op (Zone Management Send).
    #[inline]
    pub fn is_zone_management(self) -> bool {
        matches!(
            self,
            Op::ZoneReset | Op::ZoneFinish | Op::ZoneOpen | Op::ZoneClose | Op::ZoneOffline
        )
    }

    /// Whether the op writes data (a write, or a zoned drive's append).
    #[inline]
    pub fn writes(self) -> bool {
        matches!(self, Op::Write | Op::Append)
    }
}

/// Request flags a driver may set, and a write's stream id (high byte; 0 = the default
/// stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(u16);

impl Flags {
    pub const NONE: Flags = Flags(0);
    /// Force unit access: the write is durable when it completes.
    pub const FUA: Flags = Flags(1);
    /// The data is file-system metadata (a placement hint).
    pub const META: Flags = Flags(2);
    /// Fusion device: the request addresses the PCM by byte, not the NAND by physical unit
    /// (see [`Space`]).
    pub const PCM: Flags = Flags(4);
    /// Zoned drive, zone management: the action applies to every zone in the states it takes
    /// (the Select All bit of Zone Management Send); the offset is ignored.
    pub const ALL_ZONES: Flags = Flags(8);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags with write stream `stream`: the placement id a write carries (NVMe 1.3
    /// §9.3, the Streams directive's stream identifier; `ftl.streams` in the config). It must
    /// be below `ftl.streams`.
    pub const fn with_stream(self, stream: u8) -> Flags {
        Flags((self.0 & 0xff) | (stream as u16) << 8)
    }

    /// The write stream these flags name (0 when none was set).
    #[inline]
    pub const fn stream(self) -> u8 {
        (self.0 >> 8) as u8
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// Which of a fusion device's two physical spaces a request addresses (`ctrl::fusion`): the
/// NAND by physical unit, as a raw device does, or the PCM by byte address. Devices with one
/// medium have one space, `Nand` by name, whatever that medium is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Space {
    #[default]
    Nand,
    Pcm,
}

impl Space {
    /// The space a request with `flags` addresses.
    #[inline]
    pub fn of(flags: Flags) -> Space {
        if flags.contains(Flags::PCM) {
            Space::Pcm
        } else {
            Space::Nand
        }
    }
}

/// One request from a driver: `len` bytes at byte `offset` of the logical space.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    /// The submitter: its commands run on host core `queue mod cores` and go to the
    /// interface's queue `queue mod io_queues`.
    pub queue: u32,
    pub flags: Flags,
    /// When the request arrived at the host; its latency counts from here (at or before the
    /// time it is submitted: an open-loop arrival may wait in the driver's backlog).
    pub arrival: SimTime,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// Raw device: a program to a page that is not the next erased page of its block (NAND
    /// pages are programmed once after an erase, in order). Nothing was written.
    ProgramOrder,
    /// Raw device: a program that is not whole pages, or an erase that is not whole blocks.
    /// Nothing changed.
    Misaligned,
    /// The device does not do this operation (a trim on a raw device). Nothing changed.
    Unsupported,
    /// A read whose data could not be decoded, even after every read-retry step
    /// (`[reliability]`).
    Uncorrectable,
    /// The drive wore out into read-only mode: writes and trims are refused, reads still work.
    ReadOnly,
    /// No room could be found for the write's data; what it would have replaced is kept.
    NoSpace,
    /// A write or trim into a range the firmware protects (`controller.write_protect`).
    /// Nothing changed.
    WriteProtected,
    /// Zoned drive (ZNS status B8h, Zone Boundary Error): a write past the zone's capacity.
    ZoneBoundary,
    /// ZNS B9h, Zone Is Full: a write to a full zone.
    ZoneFull,
    /// ZNS BAh, Zone Is Read Only: a write to a read-only zone.
    ZoneReadOnly,
    /// ZNS BBh, Zone Is Offline: an access to an offline zone.
    ZoneOffline,
    /// ZNS BCh, Zone Invalid Write: a write not at the zone's write pointer.
    ZoneInvalidWrite,
    /// ZNS BDh, Too Many Active Zones: opening the zone would pass the active limit.
    TooManyActiveZones,
    /// ZNS BEh, Too Many Open Zones: opening the zone would pass the open limit.
    TooManyOpenZones,
    /// ZNS BFh, Invalid Zone State Transition: the action does not apply to the zone's state.
    ZoneInvalidTransition,
    /// Generic 02h, Invalid Field in Command: a zone command whose LBA is not a zone's start.
    InvalidField,
}

impl Status {
    /// How many statuses there are (for counts indexed by `status as usize`).
    pub const COUNT: usize = 17;

    pub const ALL: [Status; Status::COUNT] = [
        Status::Ok,
        Status::ProgramOrder,
        Status::Misaligned,
        Status::Unsupported,
        Status::Uncorrectable,
        Status::ReadOnly,
        Status::NoSpace,
        Status::WriteProtected,
        Status::ZoneBoundary,
        Status::ZoneFull,
        Status::ZoneReadOnly,
        Status::ZoneOffline,
        Status::ZoneInvalidWrite,
        Status::TooManyActiveZones,
        Status::TooManyOpenZones,
        Status::ZoneInvalidTransition,
        Status::InvalidField,
    ];

    /// The worse of two: a request fails if any of its commands did.
    #[inline]
    pub fn and(self, other: Status) -> Status {
        if self == Status::Ok {
            other
        } else {
            self
        }
    }

    /// A short name (for scripts): `ok`, `program_order`, `misaligned`, …
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::ProgramOrder => "program_order",
            Status::Misaligned => "misaligned",
            Status::Unsupported => "unsupported",
            Status::Uncorrectable => "uncorrectable",
            Status::ReadOnly => "read_only",
            Status::NoSpace => "no_space",
            Status::WriteProtected => "write_protected",
            Status::ZoneBoundary => "zone_boundary",
            Status::ZoneFull => "zone_full",
            Status::ZoneReadOnly => "zone_read_only",
            Status::ZoneOffline => "zone_offline",
            Status::ZoneInvalidWrite => "zone_invalid_write",
            Status::TooManyActiveZones => "too_many_active_zones",
            Status::TooManyOpenZones => "too_many_open_zones",
            Status::ZoneInvalidTransition => "zone_invalid_transition",
            Status::InvalidField => "invalid_field",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::ProgramOrder => {
                "program refused: a block's pages are programmed once after its erase, in order"
            }
            Status::Misaligned => "refused: programs are whole pages, erases whole blocks",
            Status::Unsupported => "operation not supported by this device",
            Status::Uncorrectable => "unrecovered read error: the data could not be decoded",
            Status::ReadOnly => "the drive is worn out and read-only",
            Status::NoSpace => "no room for the data: the drive is out of good blocks",
            Status::WriteProtected => "refused: the range is write-protected",
            Status::ZoneBoundary => "Zone Boundary Error: the write passes the zone's capacity",
            Status::ZoneFull => "Zone Is Full",
            Status::ZoneReadOnly => "Zone Is Read Only",
            Status::ZoneOffline => "Zone Is Offline",
            Status::ZoneInvalidWrite => "Zone Invalid Write: not at the zone's write pointer",
            Status::TooManyActiveZones => "Too Many Active Zones",
            Status::TooManyOpenZones => "Too Many Open Zones",
            Status::ZoneInvalidTransition => {
                "Invalid Zone State Transition: the action does not apply to the zone's state"
            }
            Status::InvalidField => "Invalid Field in Command: not the start of a zone",
        }
    }
}

/// A finished request, as the device reports it to its driver.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// The id `Device::submit` returned.
    pub id: u32,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub queue: u32,
    pub arrival: SimTime,
    /// When the host finished its completion work.
    pub done: SimTime,
    pub status: Status,
}

/// A command: one piece of a request, at most the transfer limit long (a trim or flush is
/// always one command).
pub(crate) struct Cmd {
    /// The request it belongs to.
    pub req: u32,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    /// The interface queue it was submitted to.
    pub sq: u32,
    /// The host core that submitted it and runs its completion.
    pub core: u32,
    /// Flash transactions (or buffer placements) still to finish.
    pub txns_left: u32,
    /// Read-modify-write reads still to finish.
    pub rmw_left: u32,
    /// When the last of its read data reached host memory.
    pub data_done: SimTime,
    /// Queued interfaces: its data phase has started (the set-up message was sent).
    pub data_started: bool,
    /// DRAM interface: offset of its space in the data buffer.
    pub buf: u64,
    /// How the controller ended it.
    pub status: Status,
    /// A write's stream (`Flags::stream` of its request).
    pub stream: u8,
    /// A write with Force Unit Access (`Flags::FUA`): it completes once its data is durable.
    pub fua: bool,
    /// Fusion device: the physical space it addresses.
    pub space: Space,
}

impl Cmd {
    /// `len` bytes of request `req` at `offset`, on interface queue `sq` and host core `core`,
    /// with nothing done yet.
    #[inline]
    pub fn new(req: u32, op: Op, offset: u64, len: u64, sq: u32, core: u32) -> Cmd {
        Cmd {
            req,
            op,
            offset,
            len,
            sq,
            core,
            txns_left: 0,
            rmw_left: 0,
            data_done: SimTime::ZERO,
            data_started: false,
            buf: 0,
            status: Status::Ok,
            stream: 0,
            fua: false,
            space: Space::Nand,
        }
    }
}

/// Commands a request becomes: trims, flushes and erases are one command, the rest split at
/// `max_cmd`.
#[inline]
pub(crate) fn cmds_of(op: Op, len: u64, max_cmd: u64) -> u32 {
    if op.moves_no_data() {
        1
    } else {
        len.div_ceil(max_cmd).max(1) as u32
    }
}

/// One row per completed request, when the caller asks for them.
#[derive(Clone, Copy, Debug)]
pub struct RequestRecord {
    pub op: u8,
    /// The host queue it came from (a job's instance k: queue k).
    pub queue: u32,
    pub offset: u64,
    pub issue_ps: u64,
    pub latency_ps: u64,
    /// The request's length in bytes.
    pub len: u64,
}
