//! The NVMe controller's submission-queue arbiter: which SQ the controller fetches from next,
//! and how many of its entries, when it holds a bounded number of commands
//! (`interface.controller_slots`). NVMe Base Specification 2.0, "Command Arbitration":
//!
//! - round robin (CC.AMS 000b): every SQ in turn, each for up to the arbitration burst;
//! - weighted round robin with urgent priority class (CC.AMS 001b): an SQ of the urgent class
//!   is served before any other (strict priority, round robin among the urgent SQs); then the
//!   high, medium and low classes share the rest by their weights, each class starting up to
//!   its weight in commands per round, round robin among the SQs of a class, each SQ for up to
//!   the burst. An empty class gives up the rest of its turn.
//!
//! The admin queue is not part of the performance model (its commands go through the
//! register-level controller, `driver::nvme_regs`), so its strict first place has nothing to
//! order here.

use crate::config::{Arbitration, ArbitrationWeights, PriorityClass};

/// The weighted classes, in the order a round serves them.
const WEIGHTED: [PriorityClass; 3] = [
    PriorityClass::High,
    PriorityClass::Medium,
    PriorityClass::Low,
];

pub struct Arbiter {
    mode: Arbitration,
    /// Commands each weighted class may start per round: high, medium, low.
    weights: [u32; 3],
    /// The SQs of each class (indexed by `PriorityClass as usize`), in ascending order. Round
    /// robin keeps every SQ under `Medium` and looks at no other list.
    members: [Vec<u32>; 4],
    /// Per class, the position in `members` its round robin looks at first.
    next: [usize; 4],
    /// The weighted class being served (an index into `WEIGHTED`) and the commands it may
    /// still start this round.
    turn: usize,
    credit: u32,
}

impl Arbiter {
    /// An arbiter over `queues` SQs, all of class medium until [`Arbiter::set_classes`].
    pub fn new(mode: Arbitration, weights: ArbitrationWeights, queues: u32) -> Arbiter {
        let mut a = Arbiter {
            mode,
            weights: [weights.high, weights.medium, weights.low],
            members: Default::default(),
            next: [0; 4],
            turn: 0,
            credit: weights.high,
        };
        a.set_classes(&vec![PriorityClass::Medium; queues as usize]);
        a
    }

    /// Each SQ's class (the QPRIO it was created with), one per SQ.
    pub fn set_classes(&mut self, classes: &[PriorityClass]) {
        self.members = Default::default();
        for (sq, &c) in classes.iter().enumerate() {
            let c = match self.mode {
                Arbitration::RoundRobin => PriorityClass::Medium,
                Arbitration::WeightedRoundRobin => c,
            };
            self.members[c as usize].push(sq as u32);
        }
        self.next = [0; 4];
        self.turn = 0;
        self.credit = self.weights[0];
    }

    /// The next SQ of `class` in its round robin with entries to fetch (`waiting(sq) > 0`).
    fn next_in(&mut self, class: PriorityClass, waiting: &impl Fn(u32) -> u32) -> Option<u32> {
        let c = class as usize;
        let list = &self.members[c];
        let n = list.len();
        for i in 0..n {
            let k = (self.next[c] + i) % n;
            if waiting(list[k]) > 0 {
                self.next[c] = (k + 1) % n;
                return Some(list[k]);
            }
        }
        None
    }

    /// The next fetch: the SQ and how many of its entries, at most `burst` and `slots` (the
    /// controller's free slots, ≥ 1). `waiting(sq)` is the entries an SQ has to fetch, 0 for
    /// one that has none or a fetch in flight. None: no SQ has anything to fetch.
    pub fn pick(
        &mut self,
        waiting: impl Fn(u32) -> u32,
        burst: u32,
        slots: u32,
    ) -> Option<(u32, u32)> {
        let cap = burst.min(slots);
        match self.mode {
            Arbitration::RoundRobin => {
                let sq = self.next_in(PriorityClass::Medium, &waiting)?;
                Some((sq, waiting(sq).min(cap)))
            }
            Arbitration::WeightedRoundRobin => {
                if let Some(sq) = self.next_in(PriorityClass::Urgent, &waiting) {
                    return Some((sq, waiting(sq).min(cap)));
                }
                // The class being served, then the two others, then it again with a new round's
                // credit: four looks find any weighted SQ with entries.
                for _ in 0..=WEIGHTED.len() {
                    if self.credit > 0 {
                        if let Some(sq) = self.next_in(WEIGHTED[self.turn], &waiting) {
                            let count = waiting(sq).min(cap).min(self.credit);
                            self.credit -= count;
                            return Some((sq, count));
                        }
                    }
                    self.turn = (self.turn + 1) % WEIGHTED.len();
                    self.credit = self.weights[self.turn];
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The arbiter against a reference model written from the specification's words, over
    //! random queue states; and the shares a backlogged round gives each class.

    use super::*;
    use proptest::prelude::*;

    /// The specification's arbitration told plainly: a class's round robin remembers the last
    /// SQ it served (by number, not position); a round gives each weighted class its weight in
    /// commands, served high, medium, low; urgent SQs go first.
    struct Reference {
        wrr: bool,
        class_of: Vec<PriorityClass>,
        weights: [u32; 3],
        last_served: [Option<u32>; 4],
        /// Commands each weighted class started in the current round, and which class is on.
        used: [u32; 3],
        on: usize,
    }

    impl Reference {
        fn new(wrr: bool, class_of: Vec<PriorityClass>, weights: [u32; 3]) -> Reference {
            Reference {
                wrr,
                class_of,
                weights,
                last_served: [None; 4],
                used: [0; 3],
                on: 0,
            }
        }

        /// In `class`, the first SQ numbered after the last one served (wrapping) that waits.
        fn round_robin(&mut self, class: PriorityClass, waiting: &[u32]) -> Option<u32> {
            let mine: Vec<u32> = (0..waiting.len() as u32)
                .filter(|&sq| !self.wrr || self.class_of[sq as usize] == class)
                .collect();
            let slot = if self.wrr { class as usize } else { 0 };
            let after = |sq: u32| match self.last_served[slot] {
                Some(l) => sq > l,
                None => true,
            };
            let pick = mine
                .iter()
                .copied()
                .filter(|&sq| after(sq) && waiting[sq as usize] > 0)
                .chain(mine.iter().copied().filter(|&sq| waiting[sq as usize] > 0))
                .next()?;
            self.last_served[slot] = Some(pick);
            Some(pick)
        }

        fn pick(&mut self, waiting: &[u32], burst: u32, slots: u32) -> Option<(u32, u32)> {
            let most = burst.min(slots);
            if !self.wrr {
                let sq = self.round_robin(PriorityClass::Medium, waiting)?;
                return Some((sq, waiting[sq as usize].min(most)));
            }
            if let Some(sq) = self.round_robin(PriorityClass::Urgent, waiting) {
                return Some((sq, waiting[sq as usize].min(most)));
            }
            for _ in 0..4 {
                let left = self.weights[self.on] - self.used[self.on];
                if left > 0 {
                    if let Some(sq) = self.round_robin(WEIGHTED[self.on], waiting) {
                        let n = waiting[sq as usize].min(most).min(left);
                        self.used[self.on] += n;
                        return Some((sq, n));
                    }
                }
                self.on = (self.on + 1) % 3;
                self.used[self.on] = 0;
            }
            None
        }
    }

    fn class(i: u8) -> PriorityClass {
        PriorityClass::ALL[i as usize % 4]
    }

    proptest! {
        /// Over random classes, weights, bursts and a random sequence of queue states, the
        /// arbiter picks what the reference model picks, every time.
        #[test]
        fn the_arbiter_picks_as_the_reference_model(
            wrr in any::<bool>(),
            classes in prop::collection::vec(0u8..4, 1..9),
            weights in prop::array::uniform3(1u32..6),
            burst in 1u32..5,
            steps in prop::collection::vec((prop::collection::vec(0u32..4, 9), 1u32..6), 1..80),
        ) {
            let classes: Vec<PriorityClass> = classes.into_iter().map(class).collect();
            let mode = if wrr { Arbitration::WeightedRoundRobin } else { Arbitration::RoundRobin };
            let w = ArbitrationWeights { high: weights[0], medium: weights[1], low: weights[2] };
            let mut fast = Arbiter::new(mode, w, classes.len() as u32);
            fast.set_classes(&classes);
            let mut reference = Reference::new(wrr, classes.clone(), weights);
            for (state, slots) in steps {
                let waiting = &state[..classes.len()];
                let got = fast.pick(|sq| waiting[sq as usize], burst, slots);
                let want = reference.pick(waiting, burst, slots);
                prop_assert_eq!(got, want, "waiting {:?}, slots {}", waiting, slots);
                if let Some((sq, n)) = got {
                    prop_assert!(n >= 1 && n <= burst.min(slots) && n <= waiting[sq as usize]);
                } else {
                    prop_assert!(waiting.iter().all(|&w| w == 0), "work-conserving");
                }
            }
        }
    }

    /// Every SQ always backlogged: urgent takes everything; without it, each round gives the
    /// high, medium and low classes their weights in commands, whatever the burst.
    #[test]
    fn backlogged_classes_share_by_their_weights_and_urgent_goes_first() {
        use PriorityClass::*;
        let w = ArbitrationWeights {
            high: 8,
            medium: 4,
            low: 2,
        };
        let mut a = Arbiter::new(Arbitration::WeightedRoundRobin, w, 5);
        a.set_classes(&[Low, High, Medium, High, Urgent]);
        let full = |_: u32| 100;
        for _ in 0..10 {
            assert_eq!(a.pick(full, 3, 64).map(|p| p.0), Some(4));
        }
        a.set_classes(&[Low, High, Medium, High, Low]);
        let mut per_sq = [0u32; 5];
        for _ in 0..6 * 10 {
            let (sq, n) = a.pick(full, 3, 64).unwrap();
            per_sq[sq as usize] += n;
        }
        // Ten rounds of high 8 (3 + 3 + 2), medium 4 (3 + 1), low 2 (2): six picks a round.
        assert_eq!(per_sq[1] + per_sq[3], 80);
        assert_eq!(per_sq[2], 40);
        assert_eq!(per_sq[0] + per_sq[4], 20);
        // Round robin within a class: the two high SQs alternate.
        assert_eq!(per_sq[1], per_sq[3]);
    }

    /// Round robin ignores the classes: every SQ in turn.
    #[test]
    fn round_robin_serves_every_sq_in_turn_whatever_its_class() {
        let mut a = Arbiter::new(Arbitration::RoundRobin, ArbitrationWeights::default(), 3);
        a.set_classes(&[
            PriorityClass::Low,
            PriorityClass::Urgent,
            PriorityClass::High,
        ]);
        let order: Vec<u32> = (0..6).map(|_| a.pick(|_| 5, 8, 8).unwrap().0).collect();
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
    }
}
