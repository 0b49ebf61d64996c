//! The host's CPU cores: the I/O stack's cost per command on the core that issued it (submit,
//! completion handling, polling), per system call of the I/O engine, per request through the
//! kernel's layers above the driver (file system, block layer, I/O scheduler) and per KiB a
//! command moves, each core a serial resource. Costs come from `[host]` as times or as instruction
//! counts at a clock (`HostConfig::costs`).

use crate::config::{HostConfig, InterruptMode};
use crate::sim::time::{BackfillTimeline, Timeline};
use crate::sim::SimTime;

pub struct HostCpu {
    cores: Vec<BackfillTimeline>,
    submit_cost: SimTime,
    complete_cost: SimTime,
    poll_cost: SimTime,
    syscall_cost: SimTime,
    /// File system, block layer and I/O scheduler, per request.
    request_cost: SimTime,
    /// Picoseconds per KiB a command moves, paid at submit (0: none).
    kib_cost_ps: u64,
}

impl HostCpu {
    /// The cores of `h`, which validation has checked (`HostConfig::costs` is Ok).
    pub fn new(h: &HostConfig) -> HostCpu {
        let c = h
            .costs()
            .unwrap_or_else(|(f, m)| panic!("unvalidated host config: {f}: {m}"));
        HostCpu {
            cores: vec![BackfillTimeline::default(); h.cores as usize],
            submit_cost: c.submit,
            complete_cost: c.complete,
            poll_cost: c.poll,
            syscall_cost: c.syscall,
            // Validation bounds each by one second.
            request_cost: c.fs + c.block + c.sched,
            kib_cost_ps: c.kib.0,
        }
    }

    pub fn cores(&self) -> u32 {
        self.cores.len() as u32
    }

    /// The driver's submit path of one command of `bytes` on `core` from `now`; returns when
    /// it ends.
    #[inline]
    pub fn submit(&mut self, core: u32, now: SimTime, bytes: u64) -> SimTime {
        let mut cost = self.submit_cost;
        if self.kib_cost_ps != 0 {
            cost += self.bytes_cost(bytes);
        }
        self.cores[core as usize].reserve(now, cost).1
    }

    /// The per-KiB cost of `bytes`, rounded down to whole picoseconds (saturating: validation
    /// bounds the per-KiB cost by 1 s, so only absurd lengths could reach the clock's end).
    fn bytes_cost(&self, bytes: u64) -> SimTime {
        let ps = (self.kib_cost_ps as u128 * bytes as u128) / 1024;
        SimTime(u64::try_from(ps).unwrap_or(u64::MAX))
    }

    /// One system call of the I/O engine on `core` from `now` (none when it costs nothing);
    /// work the core does after it queues behind it.
    #[inline]
    pub fn syscall(&mut self, core: u32, now: SimTime) {
        if self.syscall_cost != SimTime::ZERO {
            self.cores[core as usize].reserve(now, self.syscall_cost);
        }
    }

    /// One request's way through the file system, the block layer and the I/O scheduler.
    #[inline]
    pub fn request_cost(&self) -> SimTime {
        self.request_cost
    }

    /// Reserve `dur` of `core` from `at`: (start, end).
    #[inline]
    pub fn reserve(&mut self, core: u32, at: SimTime, dur: SimTime) -> (SimTime, SimTime) {
        self.cores[core as usize].reserve(at, dur)
    }

    /// The timeline of `core`, for work planned piece by piece (the DRAM interface's copies).
    pub fn core_mut(&mut self, core: u32) -> &mut Timeline {
        &mut self.cores[core as usize].line
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
        self.cores.iter().map(|t| t.line.busy)
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
            ..HostConfig::default()
        })
    }

    #[test]
    fn submits_on_one_core_queue_behind_each_other() {
        let mut c = cpu(2);
        assert_eq!(c.submit(0, SimTime::ZERO, 4096), SimTime::from_ns(1500));
        assert_eq!(c.submit(0, SimTime::ZERO, 4096), SimTime::from_ns(3000));
        // Another core is free.
        assert_eq!(c.submit(1, SimTime::ZERO, 4096), SimTime::from_ns(1500));
        let busy: Vec<_> = c.busy().collect();
        assert_eq!(busy, vec![SimTime::from_ns(3000), SimTime::from_ns(1500)]);
    }

    /// A gem5-style host: 1 GHz, one instruction per cycle. Submit 10,000 instructions, a
    /// system call 2,000, 100 per KiB: a 512 KiB command after one system call ends at
    /// 2 µs + 10 µs + 51.2 µs.
    #[test]
    fn instruction_counts_syscalls_and_bytes_add_up_on_the_core() {
        let mut c = HostCpu::new(&HostConfig {
            cores: 1,
            clock: Some(crate::config::Rate(1e9)),
            submit_instructions: Some(10_000),
            syscall_instructions: Some(2_000),
            kib_instructions: Some(100),
            ..HostConfig::default()
        });
        c.syscall(0, SimTime::ZERO);
        let end = c.submit(0, SimTime::ZERO, 512 * 1024);
        assert_eq!(end, SimTime::from_ns(2_000 + 10_000 + 51_200));
        // 1.5 KiB: 150 ns of per-KiB work.
        let end2 = c.submit(0, end, 1536);
        assert_eq!(end2, end + SimTime::from_ns(10_150));
        // Without the new costs, a system call takes nothing.
        let mut d = cpu(1);
        d.syscall(0, SimTime::ZERO);
        assert_eq!(d.submit(0, SimTime::ZERO, 1 << 20), SimTime::from_ns(1500));
    }

    /// A completion handler is reserved when the device posts its entry, for when the
    /// interrupt will arrive (10 µs). A submit the core runs before that takes the idle time in
    /// front of it instead of queueing behind the handler.
    #[test]
    fn a_submit_before_a_handler_reserved_ahead_runs_in_the_idle_time_before_it() {
        let us = SimTime::from_us;
        let mut c = cpu(1);
        assert_eq!(c.reserve(0, us(10), us(2)), (us(10), us(12)));
        assert_eq!(c.submit(0, SimTime::ZERO, 4096), SimTime::from_ns(1500));
        assert_eq!(c.submit(0, SimTime::ZERO, 4096), SimTime::from_ns(3000));
        // Work after the handler still queues behind it.
        assert_eq!(c.submit(0, us(11), 4096), SimTime::from_ns(13_500));
        let busy: Vec<_> = c.busy().collect();
        assert_eq!(busy, vec![SimTime::from_ns(6500)]);
    }

    /// Work longer than the idle time left runs until the handler starts and finishes after it
    /// (the interrupt pre-empts it).
    #[test]
    fn work_longer_than_the_idle_time_finishes_after_the_handler() {
        let us = SimTime::from_us;
        let mut c = cpu(1);
        c.reserve(0, us(10), us(2));
        // 1.5 µs from 9 µs: 1 µs before the handler, 0.5 µs after it.
        assert_eq!(c.submit(0, us(9), 4096), SimTime::from_ns(12_500));
        // The idle time is used up: the next submit starts after both.
        assert_eq!(c.submit(0, us(9), 4096), SimTime::from_ns(14_000));
        let busy: Vec<_> = c.busy().collect();
        assert_eq!(busy, vec![SimTime::from_ns(5000)]);
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
