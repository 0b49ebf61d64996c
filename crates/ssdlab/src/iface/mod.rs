//! Host interfaces: what carries commands and data between the host and the controller, and
//! what limits the commands in flight.
//!
//! - `nvme`: NVMe over PCIe — doorbells, SQ fetch and arbitration, data DMA, completion — on
//!   the link cost model of `pcie`.
//! - `ata`: IDE (one command at a time, task-file registers, UDMA) and SATA/AHCI (FIS exchanges
//!   on a half-duplex 8b/10b link, NCQ up to 32 tags).
//! - `ufs`: UFS over M-PHY gears and UniPro framing (UPIUs, 32 transfer-request slots).
//! - `emmc`: eMMC 5.1 on an 8-bit bus (commands on the CMD line, 512-byte blocks on DAT,
//!   command queueing of up to 32 tasks).
//! - `dramif`: the DRAM-interface protocol of seed 000 (shared buffer on an LPDDR channel,
//!   host DMA, buddy-allocated data buffer, SRAM banks); `dram_link` runs it.
//!
//! Every interface but NVMe is described by a [`Proto`]: a few link reservations per command on
//! named channels ([`Chan`]) that map onto the two link timelines, a framing cost for data
//! ([`Wire`]), and a device-wide number of command slots. `queued` runs IDE, SATA, UFS and eMMC
//! from their `Proto`.
//!
//! The device holds one [`Interface`]: the choice is this enum, and each variant owns its state.

pub mod arbiter;
pub mod ata;
pub mod buddy;
pub mod dram_link;
pub mod dramif;
pub mod emmc;
pub mod nvme;
pub mod pcie;
pub mod queued;
pub mod ufs;

use crate::config::SsdConfig;
use crate::error::{got, Error, Invalid, Problem, Result};
use crate::event::Event;
use crate::host::HostCpu;
use crate::request::{Cmd, Status};
use crate::sim::{EventQueue, SimTime, Slab};

/// The interface protocols (`interface.kind`, parsed at load).
pub use crate::config::InterfaceKind as Kind;

/// What a link reservation carries. Each protocol maps the four onto its timelines: a
/// full-duplex link (PCIe, UFS) has one per direction, a half-duplex one (IDE, SATA) shares one,
/// and eMMC has its CMD line apart from its DAT lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chan {
    /// Host to device: commands.
    Cmd = 0,
    /// Device to host: acknowledgements, transfer set-up, status.
    Status = 1,
    /// Host to device: write data.
    DataOut = 2,
    /// Device to host: read data.
    DataIn = 3,
}

/// Framing cost of a data transfer: payload cut into segments (an ATA data FIS, a UPIU, an eMMC
/// block), each with overhead bytes and a fixed time, and the whole stream cut again into link
/// frames (UniPro L2 frames) with overhead bytes each.
#[derive(Clone, Copy, Debug)]
pub struct Wire {
    /// Picoseconds per byte on the wire, × 1024; 0 for an ideal link.
    pub ps_per_byte_x1024: u64,
    pub seg_bytes: u64,
    pub seg_overhead_bytes: u64,
    pub seg_overhead_ps: u64,
    /// 0: no second level of framing.
    pub frame_bytes: u64,
    pub frame_overhead_bytes: u64,
}

impl Wire {
    /// A wire moving `bytes_per_s` of line payload with no framing.
    pub fn at_rate(bytes_per_s: f64) -> Wire {
        Wire {
            ps_per_byte_x1024: if bytes_per_s.is_finite() {
                (1e12 / bytes_per_s * 1024.0).round() as u64
            } else {
                0
            },
            seg_bytes: u64::MAX,
            seg_overhead_bytes: 0,
            seg_overhead_ps: 0,
            frame_bytes: 0,
            frame_overhead_bytes: 0,
        }
    }

    pub fn ideal(&self) -> bool {
        self.ps_per_byte_x1024 == 0
    }

    /// Time on the wire of `bytes` of payload (0 bytes: nothing).
    #[inline]
    pub fn time(&self, bytes: u64) -> SimTime {
        if bytes == 0 {
            return SimTime::ZERO;
        }
        self.framed(bytes, bytes.div_ceil(self.seg_bytes))
    }

    /// Time of a control message of `bytes` sent as one segment (a FIS, a UPIU, a token).
    #[inline]
    pub fn message(&self, bytes: u64) -> SimTime {
        self.framed(bytes, 1)
    }

    /// `bytes` of payload in `segs` segments, each with its overhead, the whole cut into frames.
    #[inline]
    fn framed(&self, bytes: u64, segs: u64) -> SimTime {
        if self.ideal() {
            return SimTime::ZERO;
        }
        let mut wire = bytes.saturating_add(segs.saturating_mul(self.seg_overhead_bytes));
        if self.frame_bytes > 0 {
            wire = wire.saturating_add(
                wire.div_ceil(self.frame_bytes)
                    .saturating_mul(self.frame_overhead_bytes),
            );
        }
        SimTime::of_bytes(wire, self.ps_per_byte_x1024) + SimTime(self.seg_overhead_ps) * segs
    }

    /// Payload bytes per second for a long transfer (for reports).
    pub fn payload_bytes_per_s(&self) -> f64 {
        if self.ideal() {
            return f64::INFINITY;
        }
        let n = 1u64 << 24;
        n as f64 / (self.time(n).ps() as f64 * 1e-12)
    }
}

/// A non-NVMe interface as the engine sees it: reservations per command on channels, and how
/// many commands the device takes at once. Built by each protocol module from the config.
#[derive(Clone, Debug)]
pub struct Proto {
    pub kind: Kind,
    /// Commands in flight at the device at most (the rest wait in the host's block layer).
    pub slots: u32,
    /// Which timeline carries each channel: false = `link_down`, true = `link_up`.
    pub on_up: [bool; 4],
    /// Host-side time between the driver's submit and the command reaching the link (doorbell
    /// write, host-controller fetch of the descriptor); does not hold the link.
    pub cmd_prep: SimTime,
    /// Link time of the command itself (Chan::Cmd).
    pub cmd: SimTime,
    /// The device's acknowledgement after taking the command (Chan::Status), e.g. the register
    /// FIS that releases the SATA link under NCQ; zero when there is none.
    pub ack: SimTime,
    /// Before the first byte of read data (Chan::Status): a DMA Setup FIS, eMMC's task
    /// execution command.
    pub read_setup: SimTime,
    /// Before write data flows (Chan::Status): a DMA Setup FIS, a Ready-To-Transfer UPIU.
    pub write_setup: SimTime,
    /// Further set-up per `write_grant_bytes` of write data (UFS: one RTT per grant).
    pub write_grant_bytes: u64,
    pub data_in: Wire,
    pub data_out: Wire,
    /// The device's completion message (Chan::Status): Set Device Bits FIS, Response UPIU.
    pub status: SimTime,
    /// Host CPU time reading status registers in the completion path (added to the core).
    pub host_status: SimTime,
    /// A human-readable link name for reports.
    pub link_name: String,
}

impl Proto {
    /// The protocol model of `cfg.interface` (not for NVMe, which has its own path). Its
    /// error names the config and the field (`interface.link`, `interface.kind`).
    pub fn from_config(cfg: &SsdConfig) -> Result<Proto> {
        let i = &cfg.interface;
        let link =
            |p: Problem| Error::bad_config(Invalid::new(&cfg.meta.name, "interface.link", p));
        match i.kind {
            Kind::Nvme => Err(Error::bad_config(Invalid::got(
                &cfg.meta.name,
                "interface.kind",
                "\"nvme\"",
                "a kind with a protocol model (NVMe uses the queue-pair path)",
            ))),
            Kind::Ide => ata::ide_proto(i).map_err(link),
            Kind::Sata => ata::sata_proto(i).map_err(link),
            Kind::Ufs => ufs::ufs_proto(i).map_err(link),
            Kind::Emmc => emmc::emmc_proto(i).map_err(link),
            Kind::Dram => dramif::dram_proto(i).map_err(link),
        }
    }
}

/// The problem of link `l` given to an interface of another `kind` (validation refuses it
/// first, [`crate::config::Link::check_kind`]: a protocol builder meets it only if a caller
/// skipped validation).
pub(crate) fn wrong_link(l: &crate::config::Link, kind: Kind) -> Problem {
    match l.check_kind(kind) {
        Err(p) => p,
        Ok(()) => got(
            format!("{:?}", l.text()),
            format!("a link of a {} interface", kind.name()),
        ),
    }
}

/// The host interface of a device.
pub enum Interface {
    Nvme(Box<nvme::Nvme>),
    Queued(Box<queued::Queued>),
    Dram(Box<dram_link::DramLink>),
}

impl Interface {
    /// The interface of `cfg`; its error names the config and the field.
    pub fn from_config(cfg: &SsdConfig) -> Result<Interface> {
        let i = &cfg.interface;
        Ok(match i.kind {
            Kind::Nvme => Interface::Nvme(Box::new(nvme::Nvme::new(i).map_err(|p| {
                Error::bad_config(Invalid::new(&cfg.meta.name, "interface.link", p))
            })?)),
            Kind::Dram => Interface::Dram(Box::new(dram_link::DramLink::new(
                Proto::from_config(cfg)?,
                i,
                cfg.controller.skip_media,
            ))),
            _ => Interface::Queued(Box::new(queued::Queued::new(Proto::from_config(cfg)?, i))),
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            Interface::Nvme(_) => Kind::Nvme,
            Interface::Queued(q) => q.proto().kind,
            Interface::Dram(_) => Kind::Dram,
        }
    }

    /// A readable name of the link with its rate.
    pub fn link_name(&self) -> &str {
        match self {
            Interface::Nvme(n) => n.link_name(),
            Interface::Queued(q) => &q.proto().link_name,
            Interface::Dram(d) => &d.proto().link_name,
        }
    }

    /// Commands the device holds at once.
    pub fn device_queue_depth(&self) -> u64 {
        match self {
            Interface::Nvme(n) => n.device_queue_depth(),
            Interface::Queued(q) => q.proto().slots as u64,
            Interface::Dram(d) => d.proto().slots as u64,
        }
    }

    /// Commands one host queue holds; `u32::MAX` where they wait in the host without limit.
    pub fn sq_capacity(&self) -> u32 {
        match self {
            Interface::Nvme(n) => n.sq_capacity(),
            _ => u32::MAX,
        }
    }

    /// Busy time of the link: (device to host, host to device).
    pub fn link_busy(&self) -> (SimTime, SimTime) {
        match self {
            Interface::Nvme(n) => n.link_busy(),
            Interface::Queued(q) => q.link_busy(),
            // The DRAM interface's traffic is on the memory channel (its own figures).
            Interface::Dram(_) => (SimTime::ZERO, SimTime::ZERO),
        }
    }

    /// The DRAM interface's run-time state, if that is the interface.
    pub fn dramif(&self) -> Option<&dramif::DramIf> {
        match self {
            Interface::Dram(d) => Some(d.dramif()),
            _ => None,
        }
    }

    /// The driver has command `cmd` ready at `ready`: ring its doorbell, or queue it in the
    /// host until the device has a slot.
    #[inline]
    pub(crate) fn send(&mut self, cmd: u32, ready: SimTime, q: &mut EventQueue<Event>) {
        match self {
            Interface::Nvme(n) => n.ring(ready, cmd, q),
            Interface::Queued(p) => p.queue(cmd, ready),
            Interface::Dram(d) => d.queue(cmd, ready),
        }
    }

    /// After `send`: pass queued commands to the device while it has room.
    #[inline]
    pub(crate) fn issue(
        &mut self,
        now: SimTime,
        cmds: &mut Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        match self {
            Interface::Nvme(_) => {}
            Interface::Queued(p) => p.issue(now, cmds, q),
            Interface::Dram(d) => d.issue(now, cmds, cpu, q),
        }
    }

    /// The host is done with command `c`: free its device slot.
    #[inline]
    pub(crate) fn release(
        &mut self,
        now: SimTime,
        c: &Cmd,
        cmds: &mut Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        match self {
            Interface::Nvme(_) => {}
            Interface::Queued(p) => p.release(now, cmds, q),
            Interface::Dram(d) => d.release(now, c, cmds, cpu, q),
        }
    }

    /// A write command's data comes into the controller from `now`; returns when it is in.
    #[inline]
    pub(crate) fn pull_write_data(&mut self, now: SimTime, c: &Cmd) -> SimTime {
        match self {
            Interface::Nvme(n) => n.pull_write_data(now, c.len),
            Interface::Queued(p) => p.pull_write_data(now, c.len),
            Interface::Dram(d) => d.pull_write_data(now, c),
        }
    }

    /// The controller reads `bytes` of host memory from `now` (the mapping cache in an NVMe
    /// Host Memory Buffer): a read request up, the data down, as a write's data pull. Returns
    /// when the bytes are in. Only NVMe has a Host Memory Buffer (validation keeps the others
    /// out; they answer at once).
    #[inline]
    pub(crate) fn host_memory_read(&mut self, now: SimTime, bytes: u64) -> SimTime {
        match self {
            Interface::Nvme(n) => n.pull_write_data(now, bytes),
            _ => now,
        }
    }

    /// The controller writes `bytes` into host memory from `now` (posted: nothing waits for
    /// it); returns when they are on the link.
    #[inline]
    pub(crate) fn host_memory_write(&mut self, now: SimTime, bytes: u64) -> SimTime {
        match self {
            Interface::Nvme(n) => n.push_read_data(now, bytes),
            _ => now,
        }
    }

    /// `bytes` of a read command's data (at `pos` within it) go to the host from `at`; returns
    /// when they are in host memory (the DRAM interface: in the shared buffer).
    #[inline]
    pub(crate) fn push_read_data(
        &mut self,
        at: SimTime,
        c: &mut Cmd,
        bytes: u64,
        pos: u64,
    ) -> SimTime {
        match self {
            Interface::Nvme(n) => n.push_read_data(at, bytes),
            Interface::Queued(p) => p.push_read_data(at, c, bytes),
            Interface::Dram(d) => d.push_read_data(at, c, bytes, pos),
        }
    }

    /// The controller completes `cmd` at `t`: status to the host, which then runs its
    /// completion work (ending in `Event::HostComplete`).
    #[inline]
    pub(crate) fn complete(
        &mut self,
        t: SimTime,
        cmd: u32,
        cmds: &Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        match self {
            Interface::Nvme(n) => n.complete(t, cmd, cmds, cpu, q),
            Interface::Queued(p) => p.complete(t, cmd, cmds, cpu, q),
            Interface::Dram(d) => d.complete(t, cmd, cmds, cpu, q),
        }
    }
}

/// The controller's way up to the host: the interface that moves data and posts completions,
/// the host CPU that handles them, the command table and the event queue. The interface defines
/// it, so that the controller reaches the host only through the interface.
pub(crate) struct HostPort<'a> {
    pub q: &'a mut EventQueue<Event>,
    pub cmds: &'a mut Slab<Cmd>,
    pub link: &'a mut Interface,
    pub cpu: &'a mut HostCpu,
}

impl HostPort<'_> {
    /// Command `cmd` is done in the controller at `t`: status to the host.
    #[inline]
    pub fn complete(&mut self, t: SimTime, cmd: u32) {
        self.link.complete(t, cmd, self.cmds, self.cpu, self.q);
    }

    /// Command `cmd` is refused at `t` with `status`, having changed nothing.
    pub fn refuse(&mut self, t: SimTime, cmd: u32, status: Status) {
        self.cmds.get_mut(cmd).status = status;
        self.complete(t, cmd);
    }

    /// `bytes` of read command `cmd`'s data, at `pos` within it, go up from `at`; returns when
    /// they are in host memory.
    #[inline]
    pub fn push_read_data(&mut self, at: SimTime, cmd: u32, bytes: u64, pos: u64) -> SimTime {
        self.link
            .push_read_data(at, self.cmds.get_mut(cmd), bytes, pos)
    }

    /// A read command's media reads are queued: it waits for `txns` of them, and
    /// `direct_bytes` (units with no media read: unmapped, or still in the controller) go up
    /// from `direct_at`. With no media read it completes once that data is up. (Always inlined:
    /// on the read path a call of its own cost 0.4 % of profile_run's instructions.)
    #[inline(always)]
    pub fn reads_dispatched(
        &mut self,
        now: SimTime,
        cmd: u32,
        txns: u32,
        direct_bytes: u64,
        direct_at: SimTime,
    ) {
        self.cmds.get_mut(cmd).txns_left = txns;
        if direct_bytes > 0 {
            let end = self.push_read_data(direct_at, cmd, direct_bytes, 0);
            let c = self.cmds.get_mut(cmd);
            c.data_done = c.data_done.max(end);
        }
        if txns == 0 {
            let done = self.cmds.get(cmd).data_done.max(now);
            self.complete(done, cmd);
        }
    }
}

/// The host end of a controller built alone, for the controller's own tests: the interface and
/// the host CPU that handles its completions, owned here, so that a test lends the controller a
/// [`HostPort`] through the interface, as the device does, without naming the host layer.
#[cfg(test)]
pub(crate) struct HostEnd {
    link: Interface,
    cpu: HostCpu,
}

#[cfg(test)]
impl HostEnd {
    /// The interface and host CPU of `cfg`, which validation has checked.
    pub fn new(cfg: &SsdConfig) -> HostEnd {
        HostEnd {
            link: Interface::from_config(cfg).expect("a validated interface"),
            cpu: HostCpu::new(&cfg.host),
        }
    }

    /// The port up through this end, over the event queue `q` and command table `cmds`.
    pub fn port<'a>(
        &'a mut self,
        q: &'a mut EventQueue<Event>,
        cmds: &'a mut Slab<Cmd>,
    ) -> HostPort<'a> {
        HostPort {
            q,
            cmds,
            link: &mut self.link,
            cpu: &mut self.cpu,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_of_another_kind_is_refused_naming_the_config_field_and_value() {
        // Validation refuses it first; built without validation, the interface names it too.
        let mut cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
        let link = format!("{:?}", cfg.interface.link.text());
        cfg.interface.kind = Kind::Sata;
        let Err(e) = Interface::from_config(&cfg) else {
            panic!("refused")
        };
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        let i = e.invalid().unwrap();
        assert_eq!(
            (i.origin.as_str(), i.field.as_deref(), i.value.as_deref()),
            ("small-tlc", Some("interface.link"), Some(link.as_str()))
        );
        assert!(
            i.expected.as_deref().unwrap().contains("\"sata1\""),
            "{i:?}"
        );
        cfg.interface.kind = Kind::Nvme;
        let Err(e) = Proto::from_config(&cfg) else {
            panic!("NVMe has no Proto")
        };
        let i = e.invalid().unwrap();
        assert_eq!(i.field.as_deref(), Some("interface.kind"));
        assert!(i
            .to_string()
            .starts_with("small-tlc, field `interface.kind`: got \"nvme\""));
    }

    #[test]
    fn wire_framing_adds_up() {
        // 100 MB/s = 10 ns per byte; segments of 8 KiB with 40 bytes; no frames.
        let mut w = Wire::at_rate(100e6);
        w.seg_bytes = 8192;
        w.seg_overhead_bytes = 40;
        assert_eq!(w.time(8192), SimTime::from_ns((8192 + 40) * 10));
        assert_eq!(w.time(8193), SimTime::from_ns((8193 + 80) * 10));
        assert_eq!(w.message(20), SimTime::from_ns(60 * 10));
        w.frame_bytes = 100;
        w.frame_overhead_bytes = 10;
        // 8232 wire bytes in 83 frames.
        assert_eq!(w.time(8192), SimTime::from_ns((8232 + 830) * 10));
        assert!(Wire::at_rate(f64::INFINITY).time(1 << 20) == SimTime::ZERO);
    }
}
