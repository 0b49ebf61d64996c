//! The host's CPU cores: the I/O stack's cost per command on the core that issued it (submit,
//! completion handling, polling), each core a serial resource.

use crate::config::{HostConfig, InterruptMode};
use crate::sim::time::Timeline;
use crate::sim::SimTime;

pub struct HostCpu {
    cores: Vec<Timeline>,
    submit_cost: SimTime,
    complete_cost: SimTime,
    poll_cost: SimTime,
}

impl HostCpu {
    pub fn new(h: &HostConfig) -> HostCpu {
        HostCpu {
            cores: vec![Timeline::default(); h.cores as usize],
            submit_cost: h.submit_cost.0,
            complete_cost: h.complete_cost.0,
            poll_cost: h.poll_cost.0,
        }
    }

    pub fn cores(&self) -> u32 {
        self.cores.len() as u32
    }

    /// The driver's submit path of one command on `core` from `now`; returns when it ends.
    #[inline]
    pub fn submit(&mut self, core: u32, now: SimTime) -> SimTime {
        self.cores[core as usize].reserve(now, self.submit_cost).1
    }

    /// Reserve `dur` of `core` from `at`: (start, end).
    #[inline]
    pub fn reserve(&mut self, core: u32, at: SimTime, dur: SimTime) -> (SimTime, SimTime) {
        self.cores[core as usize].reserve(at, dur)
    }

    /// The timeline of `core`, for work planned piece by piece (the DRAM interface's copies).
    pub fn core_mut(&mut self, core: u32) -> &mut Timeline {
        &mut self.cores[core as usize]
    }

    /// The completion work of a command the host can see from `seen`, with an interrupt
    /// arriving `irq_latency` later (or found by a poll): when it starts and what it costs.
    /// `handler_extra` is the protocol's own work in the handler (status registers, the CQ
    /// entry).
    #[inline]
    pub fn completion(
        &self,
        mode: InterruptMode,
        seen: SimTime,
        irq_latency: SimTime,
        handler_extra: SimTime,
    ) -> (SimTime, SimTime) {
        let cost = self.complete_cost + handler_extra;
        match mode {
            InterruptMode::Polling => (seen, self.poll_cost + cost),
            _ => (seen + irq_latency, cost),
        }
    }

    /// Busy time of each core.
    pub fn busy(&self) -> impl Iterator<Item = SimTime> + '_ {
        self.cores.iter().map(|t| t.busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dur;

    fn cpu(cores: u32) -> HostCpu {
        HostCpu::new(&HostConfig {
            cores,
            submit_cost: Dur(SimTime::from_ns(1500)),
            complete_cost: Dur(SimTime::from_ns(2000)),
            poll_cost: Dur(SimTime::from_ns(300)),
        })
    }

    #[test]
    fn submits_on_one_core_queue_behind_each_other() {
        let mut c = cpu(2);
        assert_eq!(c.submit(0, SimTime::ZERO), SimTime::from_ns(1500));
        assert_eq!(c.submit(0, SimTime::ZERO), SimTime::from_ns(3000));
        // Another core is free.
        assert_eq!(c.submit(1, SimTime::ZERO), SimTime::from_ns(1500));
        let busy: Vec<_> = c.busy().collect();
        assert_eq!(busy, vec![SimTime::from_ns(3000), SimTime::from_ns(1500)]);
    }

    #[test]
    fn polling_pays_a_poll_and_no_interrupt_latency() {
        let c = cpu(1);
        let seen = SimTime::from_ns(10_000);
        let irq = SimTime::from_ns(1000);
        let extra = SimTime::from_ns(100);
        assert_eq!(
            c.completion(InterruptMode::Msix, seen, irq, extra),
            (SimTime::from_ns(11_000), SimTime::from_ns(2100))
        );
        assert_eq!(
            c.completion(InterruptMode::Polling, seen, irq, extra),
            (seen, SimTime::from_ns(2400))
        );
    }
}
