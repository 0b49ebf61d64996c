//! The events of the simulation: small `Copy` values, each naming the object it concerns.
//! `device::Device` pops them in order and routes each to the layer that owns it.

/// Every event of the simulation. Small and `Copy`; each names the object it concerns.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A driver asked to be woken (`token` is its own).
    Wake { token: u32 },
    /// A command reached the controller (NVMe: its doorbell write; other interfaces: the
    /// command itself).
    Submit { cmd: u32 },
    /// NVMe: a fetch of `sq`'s entries (at most one arbitration burst) arrived at the
    /// controller. (No count in it: a second `u32` would grow every event, and the event
    /// queue's entries with it, by a third.)
    FetchDone { sq: u32 },
    /// The HIL finished its firmware work on a command.
    Dispatch { cmd: u32 },
    /// A write command's data is in the controller.
    WriteDataIn { cmd: u32 },
    /// All read-modify-write reads of a write command are done.
    RmwDone { cmd: u32 },
    /// Cached mapping in host memory (HMB): the command's map entries arrived over the link;
    /// it goes on with its reads (`write` false) or the placing of its units.
    MapReady { cmd: u32, write: bool },
    /// The current phase of a die's operation ended.
    DieStep { die: u32 },
    /// A PCM-only device's firmware finished with a command (`ctrl::pcm`; NAND devices use
    /// `Dispatch`).
    PcmDispatch { cmd: u32 },
    /// A PCM-only device has a write command's data.
    PcmDataIn { cmd: u32 },
    /// A PCM write access ended, unless a paused read moved its end (`ctrl::pcm`, only with
    /// write pausing on).
    PcmWriteEnd { write: u32 },
    /// A PCM-only device with a cache buffer: the flush of line `slot` reached the PCM
    /// (without write pausing; with it, the flush's `PcmWriteEnd` says so).
    PcmFlushEnd { slot: u32 },
    /// The host finished handling a command's completion.
    HostComplete { cmd: u32 },
    /// Background GC: the idle time after the device's last command in flight has passed;
    /// `submissions` tells whether the host sent anything since.
    IdleCheck { submissions: u32 },
    /// NVMe with `interface.controller_slots`: the controller completed a command and its slot
    /// is free for the arbiter to fill.
    SlotFree,
}
