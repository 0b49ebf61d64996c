//! The block layer's plug: the requests one submission batch hands to the kernel (one
//! `io_submit` of several requests) are merged where they touch and put in the scheduler's
//! order before the driver sees them. Splitting at the transfer limit is `Host::split`'s.
//!
//! A merge joins a request to one already in the batch when they are the same operation from
//! the same submitter and one ends where the other starts (a back merge: the new one follows;
//! a front merge: it precedes), as long as the result fits the largest request the block layer
//! sends (Linux refuses a merge past `max_sectors`). Requests waiting in a scheduler queue
//! behind a full device queue are not merged here (see docs/host.md).

use crate::config::Scheduler;
use crate::request::Request;
use crate::sim::SimTime;

/// One request a driver submitted, inside a request the block layer merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub offset: u64,
    pub len: u64,
    pub arrival: SimTime,
}

/// A request the block layer sends on, and the submitted requests it is made of, by offset.
#[derive(Clone, Debug)]
pub struct Plugged {
    pub req: Request,
    pub parts: Vec<Part>,
}

/// The block layer's settings that shape a batch.
#[derive(Clone, Copy, Debug)]
pub struct PlugRules {
    /// Largest request after merging (the host's split limit).
    pub max_bytes: u64,
    /// Linux `nomerges`: no merging at all.
    pub nomerges: bool,
    pub scheduler: Scheduler,
}

/// The batch `reqs`, in submission order, as the block layer sends it on.
pub fn plug(reqs: &[Request], rules: PlugRules) -> Vec<Plugged> {
    let mut out: Vec<Plugged> = Vec::with_capacity(reqs.len());
    for r in reqs {
        let part = Part {
            offset: r.offset,
            len: r.len,
            arrival: r.arrival,
        };
        if !rules.nomerges && !r.op.moves_no_data() {
            // Like Linux's plug merge, the most recent request is tried first.
            if let Some(p) = out.iter_mut().rev().find(|p| mergeable(&p.req, r, rules)) {
                if p.req.offset + p.req.len == r.offset {
                    p.parts.push(part);
                } else {
                    p.req.offset = r.offset;
                    p.parts.insert(0, part);
                }
                p.req.len += r.len;
                p.req.arrival = p.req.arrival.min(r.arrival);
                continue;
            }
        }
        out.push(Plugged {
            req: *r,
            parts: vec![part],
        });
    }
    if rules.scheduler.sorts() {
        // A stable sort: requests at one offset keep their submission order.
        out.sort_by_key(|p| p.req.offset);
    }
    out
}

/// Whether `r` can join `into`: same operation, submitter and flags, touching, and small
/// enough together. Lengths are below the device's capacity, so the sums cannot overflow.
fn mergeable(into: &Request, r: &Request, rules: PlugRules) -> bool {
    into.op == r.op
        && into.queue == r.queue
        && into.flags == r.flags
        && (into.offset + into.len == r.offset || r.offset + r.len == into.offset)
        && into.len + r.len <= rules.max_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Flags;
    use crate::request::Op;

    fn req(op: Op, offset: u64, len: u64) -> Request {
        Request {
            op,
            offset,
            len,
            queue: 0,
            flags: Flags::NONE,
            arrival: SimTime::from_ns(offset / 4096),
        }
    }

    fn rules(scheduler: Scheduler) -> PlugRules {
        PlugRules {
            max_bytes: 512 * 1024,
            nomerges: false,
            scheduler,
        }
    }

    fn shape(p: &[Plugged]) -> Vec<(u64, u64, usize)> {
        p.iter()
            .map(|p| (p.req.offset, p.req.len, p.parts.len()))
            .collect()
    }

    #[test]
    fn two_adjacent_4k_writes_become_one_8k_request() {
        let out = plug(
            &[req(Op::Write, 8192, 4096), req(Op::Write, 12288, 4096)],
            rules(Scheduler::None),
        );
        assert_eq!(shape(&out), vec![(8192, 8192, 2)]);
        // The request counts from its first part's arrival; each part keeps its own.
        assert_eq!(out[0].req.arrival, SimTime::from_ns(2));
        assert_eq!(out[0].parts[1].arrival, SimTime::from_ns(3));
    }

    #[test]
    fn a_front_merge_keeps_the_parts_in_offset_order() {
        let out = plug(
            &[req(Op::Read, 12288, 4096), req(Op::Read, 8192, 4096)],
            rules(Scheduler::None),
        );
        assert_eq!(shape(&out), vec![(8192, 8192, 2)]);
        assert_eq!(out[0].parts[0].offset, 8192);
        assert_eq!(out[0].parts[1].offset, 12288);
    }

    #[test]
    fn no_merge_across_ops_gaps_the_limit_or_with_nomerges() {
        let batch = [
            req(Op::Write, 0, 4096),
            req(Op::Read, 4096, 4096),
            req(Op::Write, 12288, 4096),
        ];
        assert_eq!(
            shape(&plug(&batch, rules(Scheduler::None))),
            vec![(0, 4096, 1), (4096, 4096, 1), (12288, 4096, 1)]
        );
        // 256 KiB + 256 KiB fits 512 KiB; a third does not join.
        let big = [
            req(Op::Read, 0, 256 * 1024),
            req(Op::Read, 256 * 1024, 256 * 1024),
            req(Op::Read, 512 * 1024, 256 * 1024),
        ];
        assert_eq!(
            shape(&plug(&big, rules(Scheduler::None))),
            vec![(0, 512 * 1024, 2), (512 * 1024, 256 * 1024, 1)]
        );
        let off = PlugRules {
            nomerges: true,
            ..rules(Scheduler::None)
        };
        assert_eq!(plug(&big, off).len(), 3);
        // Trims are not merged.
        let trims = [req(Op::Trim, 0, 4096), req(Op::Trim, 4096, 4096)];
        assert_eq!(plug(&trims, rules(Scheduler::None)).len(), 2);
    }

    #[test]
    fn deadline_sends_a_batch_in_sector_order_none_as_submitted() {
        let batch = [
            req(Op::Read, 40960, 4096),
            req(Op::Read, 0, 4096),
            req(Op::Read, 20480, 4096),
        ];
        let offs = |s| {
            plug(&batch, rules(s))
                .iter()
                .map(|p| p.req.offset)
                .collect::<Vec<_>>()
        };
        assert_eq!(offs(Scheduler::None), vec![40960, 0, 20480]);
        assert_eq!(offs(Scheduler::MqDeadline), vec![0, 20480, 40960]);
        assert_eq!(offs(Scheduler::Cfq), vec![0, 20480, 40960]);
    }
}
