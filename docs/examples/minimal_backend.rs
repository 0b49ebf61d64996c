use crate::event::Event;
use crate::iface::HostPort;
use crate::request::Op;
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime};

/// Memory that serves each command after its firmware time and one fixed access time: nothing
/// to map, erase or collect.
pub struct RamDisk {
    /// The controller's firmware core: one command at a time.
    cpu: Timeline,
    cmd_overhead: SimTime,
    access: SimTime,
}

impl RamDisk {
    pub fn new(cmd_overhead: SimTime, access: SimTime) -> RamDisk {
        RamDisk { cpu: Timeline::default(), cmd_overhead, access }
    }

    /// A command reached the controller (`Event::Submit`, or an NVMe fetch): its firmware
    /// time, then its dispatch.
    pub fn accept(&mut self, now: SimTime, cmd: u32, q: &mut EventQueue<Event>) {
        let (_, end) = self.cpu.reserve(now, self.cmd_overhead);
        q.push(end, Event::Dispatch { cmd });
    }

    /// `Event::Dispatch`: a read's data goes up once accessed; a write's data is pulled first.
    pub fn dispatch(&mut self, now: SimTime, cmd: u32, up: &mut HostPort) {
        let c = up.cmds.get(cmd);
        match c.op {
            Op::Read => {
                let len = c.len;
                let end = up.push_read_data(now + self.access, cmd, len, 0);
                up.complete(end, cmd);
            }
            Op::Write => {
                let end = up.link.pull_write_data(now, c);
                up.q.push(end, Event::WriteDataIn { cmd });
            }
            // Nothing is mapped and nothing is volatile: a trim or flush has nothing to do.
            _ => up.complete(now, cmd),
        }
    }

    /// `Event::WriteDataIn`: the write's data is in the controller; it is stored once accessed.
    pub fn write_data_in(&mut self, now: SimTime, cmd: u32, up: &mut HostPort) {
        up.complete(now + self.access, cmd);
    }

    /// What the back end answers for the device (`Backend::is_mapped`): every byte is.
    pub fn is_mapped(&self, _lpn: u64) -> bool {
        true
    }

    /// Busy time of its firmware core (`Backend::firmware_busy`).
    pub fn cpu_busy(&self) -> SimTime {
        self.cpu.busy
    }
}
