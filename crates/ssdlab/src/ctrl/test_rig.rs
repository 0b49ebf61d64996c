//! Tests only: the layers around the controller built alone from a config, with no device and no
//! dispatch loop, and the two ports over them, so that each layer's tests drive it by hand.

use super::buffer::BufferManager;
use super::datacheck::DataCheck;
use super::fil::Fil;
use super::hil::Hil;
use super::{FlashPort, Ports};
use crate::config::SsdConfig;
use crate::event::Event;
use crate::ftl::Ftl;
use crate::iface::HostEnd;
use crate::media::nand::Geometry;
use crate::request::Cmd;
use crate::sim::{EventQueue, SimTime, Slab};

pub(crate) struct Layers {
    pub hil: Hil,
    pub q: EventQueue<Event>,
    pub cmds: Slab<Cmd>,
    pub host: HostEnd,
    pub fil: Fil,
    pub ftl: Ftl,
    pub check: Option<DataCheck>,
}

impl Layers {
    /// The layers of `cfg` with an empty FTL (FTL seed 1) and no data oracle.
    pub fn new(cfg: &SsdConfig) -> Layers {
        let geo = Geometry::from_config(cfg);
        Layers {
            hil: Hil::new(cfg, &geo),
            q: EventQueue::new(),
            cmds: Slab::default(),
            host: HostEnd::new(cfg),
            fil: Fil::new(cfg, &geo),
            ftl: Ftl::new(cfg, 1),
            check: None,
        }
    }

    /// The HIL and the ports over the rest, with cache buffer `cache` between them.
    pub fn ports<'a>(
        &'a mut self,
        cache: Option<&'a mut BufferManager>,
    ) -> (&'a mut Hil, Ports<'a>) {
        let p = Ports {
            up: self.host.port(&mut self.q, &mut self.cmds),
            flash: FlashPort::new(&mut self.fil, &mut self.ftl, &mut self.check),
            cache,
        };
        (&mut self.hil, p)
    }

    /// A command of `len` bytes at `offset` (request 0, queue 0, core 0) in the command table.
    pub fn cmd(&mut self, op: crate::request::Op, offset: u64, len: u64) -> u32 {
        self.cmds.insert(Cmd::new(0, op, offset, len, 0, 0))
    }

    /// Run `f` on the HIL and the ports, with no cache buffer.
    pub fn with_ports<R>(&mut self, f: impl FnOnce(&mut Hil, &mut Ports) -> R) -> R {
        let (hil, mut p) = self.ports(None);
        f(hil, &mut p)
    }

    /// Every event still queued, in order, unhandled.
    pub fn events(&mut self) -> Vec<(SimTime, Event)> {
        std::iter::from_fn(|| self.q.pop()).collect()
    }
}
