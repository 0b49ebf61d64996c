//! Hand-worked merge sequences on one plane of 8 blocks of 4 pages (page p of block b is
//! physical page 4b + p; free blocks are handed out lowest first, a just-erased block first of
//! all), and a property test that replays the operations on a model of the media.

use super::*;
use crate::config::SsdConfig;
use proptest::prelude::*;
use std::collections::BTreeMap;
use NandOp::{Copy, Erase, Program};

fn hybrid(kind: &str, logs: Option<u32>, logical_pages: u64) -> Hybrid {
    let mut ov = vec![
        "nand.channels=1".to_string(),
        "nand.dies_per_package=1".into(),
        "nand.planes_per_die=1".into(),
        "nand.blocks_per_plane=8".into(),
        "nand.pages_per_block=4".into(),
        "ftl.map_unit=\"16KiB\"".into(),
        "ftl.over_provisioning=0.5".into(),
        "precondition.fill=\"none\"".into(),
        "precondition.random_overwrite=0.0".into(),
        format!("ftl.kind=\"{kind}\""),
    ];
    if let Some(n) = logs {
        ov.push(format!("ftl.log_blocks={n}"));
    }
    let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
    Hybrid::new(
        &Geometry::from_config(&cfg),
        cfg.ftl.kind,
        logical_pages,
        logs.unwrap_or(0),
    )
}

fn w(h: &mut Hybrid, lpn: u64) -> Vec<NandOp> {
    let mut ops = Vec::new();
    h.write(lpn, &mut ops).unwrap();
    h.check().unwrap();
    ops
}

fn counts(h: &Hybrid) -> (u64, u64, u64) {
    (h.counts.switch, h.counts.partial, h.counts.full)
}

#[test]
fn block_mapping_programs_in_place_then_copies_the_block() {
    let mut h = hybrid("block", None, 16);
    for lpn in 0..4 {
        assert_eq!(w(&mut h, lpn), vec![Program { pun: lpn as u32 }]);
    }
    // Page 1 again: block 1 gets pages 0, 2 and 3 copied around the new page 1; block 0 goes.
    assert_eq!(
        w(&mut h, 1),
        vec![
            Copy { from: 0, to: 4 },
            Program { pun: 5 },
            Copy { from: 2, to: 6 },
            Copy { from: 3, to: 7 },
            Erase { block: 0 }
        ]
    );
    assert_eq!(counts(&h), (0, 0, 1));
    // LB1 starts at its page 3 in block 0 (erased just before, so handed out first); page 2
    // is then behind the pointer: block 2 gets the new page 2 and a copy of page 3.
    assert_eq!(w(&mut h, 7), vec![Program { pun: 3 }]);
    assert_eq!(
        w(&mut h, 6),
        vec![
            Program { pun: 10 },
            Copy { from: 3, to: 11 },
            Erase { block: 0 }
        ]
    );
    assert_eq!(h.counts.erases, 2);
    assert_eq!(h.counts.pages_copied, 4);
}

#[test]
fn bast_switch_partial_and_full_merges_by_hand() {
    let mut h = hybrid("bast", Some(1), 16);
    // LB0 in place in block 0.
    for lpn in 0..4 {
        assert_eq!(w(&mut h, lpn), vec![Program { pun: lpn as u32 }]);
    }
    // Overwrite of page 1: LB0's log is block 1.
    assert_eq!(w(&mut h, 1), vec![Program { pun: 4 }]);
    // LB1 in place in block 2.
    assert_eq!(w(&mut h, 4), vec![Program { pun: 8 }]);
    assert_eq!(w(&mut h, 5), vec![Program { pun: 9 }]);
    // Overwrite of LB1's page 0 wants a log; the only one is LB0's: its log holds page 1 at
    // offset 0, out of place, so a full merge into block 3 (pages 0, 2, 3 from the data block,
    // page 1 from the log), then both old blocks are erased; block 1 (erased last) is LB1's log.
    assert_eq!(
        w(&mut h, 4),
        vec![
            Copy { from: 0, to: 12 },
            Copy { from: 4, to: 13 },
            Copy { from: 2, to: 14 },
            Copy { from: 3, to: 15 },
            Erase { block: 0 },
            Erase { block: 1 },
            Program { pun: 4 }
        ]
    );
    assert_eq!(counts(&h), (0, 0, 1));
    // Page 5 to the log (behind the pointer), 6 and 7 in place, then 6 and 7 again to the log:
    // the log holds pages 4..7 at their own offsets.
    assert_eq!(w(&mut h, 5), vec![Program { pun: 5 }]);
    assert_eq!(w(&mut h, 6), vec![Program { pun: 10 }]);
    assert_eq!(w(&mut h, 7), vec![Program { pun: 11 }]);
    assert_eq!(w(&mut h, 6), vec![Program { pun: 6 }]);
    assert_eq!(w(&mut h, 7), vec![Program { pun: 7 }]);
    // The full log is switched in (block 1 becomes LB1's data block, block 2 is erased), and
    // page 4 goes to a new log, block 2.
    assert_eq!(w(&mut h, 4), vec![Erase { block: 2 }, Program { pun: 8 }]);
    assert_eq!(counts(&h), (1, 0, 1));
    assert_eq!(h.lookup(5), Some(5));
    // Log block 2 holds pages 4, 5 in order.
    assert_eq!(w(&mut h, 5), vec![Program { pun: 9 }]);
    // LB0 wants a log: LB1's is taken back by a partial merge (pages 6 and 7 copied from data
    // block 1 into log block 2, which becomes the data block; block 1 is erased and is LB0's
    // new log).
    assert_eq!(
        w(&mut h, 1),
        vec![
            Copy { from: 6, to: 10 },
            Copy { from: 7, to: 11 },
            Erase { block: 1 },
            Program { pun: 4 }
        ]
    );
    assert_eq!(counts(&h), (1, 1, 1));
    assert_eq!(h.counts.erases, 4);
    assert_eq!(h.counts.pages_copied, 6);
    assert_eq!(h.counts.host_pages_written, 16);
    assert_eq!(
        (0..8).map(|l| h.lookup(l).unwrap()).collect::<Vec<_>>(),
        vec![12, 4, 14, 15, 8, 9, 10, 11]
    );
}

#[test]
fn fast_sequential_and_random_logs_by_hand() {
    // One sequential log and one random log.
    let mut h = hybrid("fast", Some(2), 16);
    for lpn in 0..4 {
        assert_eq!(w(&mut h, lpn), vec![Program { pun: lpn as u32 }]);
    }
    assert_eq!(w(&mut h, 4), vec![Program { pun: 4 }]);
    assert_eq!(w(&mut h, 5), vec![Program { pun: 5 }]);
    // LB0 page 0 again: a run from page 0 opens the sequential log (block 2); page 1 follows.
    assert_eq!(w(&mut h, 0), vec![Program { pun: 8 }]);
    assert_eq!(w(&mut h, 1), vec![Program { pun: 9 }]);
    // LB1 page 1: not sequential for the log: the random log, block 3.
    assert_eq!(w(&mut h, 5), vec![Program { pun: 12 }]);
    assert_eq!(w(&mut h, 2), vec![Program { pun: 10 }]);
    // LB1 page 0: the sequential log (pages 0..2 of LB0 in order) is partially merged (page 3
    // copied in, data block 0 erased) and block 0 becomes LB1's sequential log.
    assert_eq!(
        w(&mut h, 4),
        vec![
            Copy { from: 3, to: 11 },
            Erase { block: 0 },
            Program { pun: 0 }
        ]
    );
    assert_eq!(counts(&h), (0, 1, 0));
    // LB0 pages 3, 1, 2 fill the random log after LB1's page 1.
    assert_eq!(w(&mut h, 3), vec![Program { pun: 13 }]);
    assert_eq!(w(&mut h, 1), vec![Program { pun: 14 }]);
    assert_eq!(w(&mut h, 2), vec![Program { pun: 15 }]);
    // LB0 page 3 again: the random log is full and the only one, so it is reclaimed: LB1
    // (first in it) by a full merge into block 4 (page 0 from the sequential log, page 1 from
    // the random log; data block 1 and the now empty sequential log 0 erased), then LB0 into
    // block 0 (page 0 from data block 2, pages 1..3 from the random log; block 2 erased); the
    // victim is erased last and reopened as the random log.
    assert_eq!(
        w(&mut h, 3),
        vec![
            Copy { from: 0, to: 16 },
            Copy { from: 12, to: 17 },
            Erase { block: 1 },
            Erase { block: 0 },
            Copy { from: 8, to: 0 },
            Copy { from: 14, to: 1 },
            Copy { from: 15, to: 2 },
            Copy { from: 13, to: 3 },
            Erase { block: 2 },
            Erase { block: 3 },
            Program { pun: 12 }
        ]
    );
    assert_eq!(counts(&h), (0, 1, 2));
    // LB1's pages 2 and 3 in place (data block 4 had pages 0 and 1); then pages 0 to 3 again in
    // the sequential log (block 2); then LB0 page 0: the full sequential log is switched in and
    // data block 4 erased; block 4 is LB0's sequential log.
    for (lpn, pun) in [(6, 18), (7, 19), (4, 8), (5, 9), (6, 10), (7, 11)] {
        assert_eq!(w(&mut h, lpn), vec![Program { pun }]);
    }
    assert_eq!(w(&mut h, 0), vec![Erase { block: 4 }, Program { pun: 16 }]);
    assert_eq!(counts(&h), (1, 1, 2));
    assert_eq!(h.counts.erases, 6);
    assert_eq!(h.counts.pages_copied, 7);
}

#[test]
fn a_trimmed_page_is_not_copied_by_a_merge() {
    let mut h = hybrid("bast", Some(1), 16);
    for lpn in 0..4 {
        w(&mut h, lpn);
    }
    h.trim(2);
    assert_eq!(h.lookup(2), None);
    assert_eq!(w(&mut h, 1), vec![Program { pun: 4 }]);
    // LB1's first write is in place; its second takes LB0's log: a full merge of pages 0, 1
    // and 3 only (page 2 was trimmed) into block 3.
    assert_eq!(w(&mut h, 4), vec![Program { pun: 8 }]);
    assert_eq!(
        w(&mut h, 4),
        vec![
            Copy { from: 0, to: 12 },
            Copy { from: 4, to: 13 },
            Copy { from: 3, to: 15 },
            Erase { block: 0 },
            Erase { block: 1 },
            Program { pun: 4 }
        ]
    );
    assert_eq!(h.lookup(2), None);
}

/// What a physical page holds in the model of the media: (logical page, version), or erased.
type Media = BTreeMap<u32, (u64, u32)>;

/// Apply `ops` to the media model, checking the rules of NAND: a page is programmed once per
/// erase, pages of a block in order; a copy reads a programmed page.
fn apply(
    media: &mut Media,
    next: &mut BTreeMap<u32, u32>,
    ops: &[NandOp],
    lpn: u64,
    version: u32,
    ppb: u32,
) -> std::result::Result<(), String> {
    let take = |next: &mut BTreeMap<u32, u32>, pun: u32| -> std::result::Result<(), String> {
        let b = pun / ppb;
        let n = next.entry(b).or_insert(0);
        if pun % ppb < *n {
            return Err(format!("page {pun} programmed out of order or twice"));
        }
        *n = pun % ppb + 1;
        Ok(())
    };
    for op in ops {
        match *op {
            Program { pun } => {
                take(next, pun)?;
                media.insert(pun, (lpn, version));
            }
            Copy { from, to } => {
                let v = *media
                    .get(&from)
                    .ok_or(format!("copy of erased page {from}"))?;
                take(next, to)?;
                media.insert(to, v);
            }
            Erase { block } => {
                next.insert(block, 0);
                for p in block * ppb..(block + 1) * ppb {
                    media.remove(&p);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Under any writes, every FTL kind keeps NAND's rules, and every logical page's mapped
    /// page holds its latest version; the counters add up.
    #[test]
    fn every_read_finds_the_latest_version(
        kind in prop_oneof![Just(("block", None)), Just(("bast", Some(1))), Just(("bast", Some(2))),
                            Just(("fast", Some(2))), Just(("fast", Some(3)))],
        writes in prop::collection::vec(0u64..16, 1..200),
    ) {
        let mut h = hybrid(kind.0, kind.1, 16);
        let (mut media, mut next) = (Media::new(), BTreeMap::new());
        let mut latest = BTreeMap::new();
        let mut ops = Vec::new();
        let mut erases = 0u64;
        for (i, &lpn) in writes.iter().enumerate() {
            ops.clear();
            h.write(lpn, &mut ops).unwrap();
            prop_assert_eq!(ops.iter().filter(|o| matches!(o, Program { .. })).count(), 1);
            erases += ops.iter().filter(|o| matches!(o, Erase { .. })).count() as u64;
            apply(&mut media, &mut next, &ops, lpn, i as u32, 4).map_err(TestCaseError::fail)?;
            latest.insert(lpn, i as u32);
            prop_assert!(h.check().is_ok(), "{:?}", h.check());
            for (&l, &v) in &latest {
                let pun = h.lookup(l).unwrap();
                prop_assert_eq!(media.get(&pun), Some(&(l, v)), "lpn {} after write {}", l, i);
            }
        }
        prop_assert_eq!(h.counts.erases, erases);
        prop_assert_eq!(h.counts.host_pages_written, writes.len() as u64);
    }
}
