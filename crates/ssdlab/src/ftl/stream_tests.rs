//! Write streams (`ftl.streams`, `ftl.stream_policy`): streams never share a block, GC's work
//! is counted against the stream that wrote the data, and data stays where the map says.

use super::tests::{run_oracle_on, tiny, Op};
use super::*;
use crate::config::{SsdConfig, StreamPolicy};
use proptest::prelude::*;

/// The tiny drive of `tests.rs` (4 planes × 16 blocks × 8 one-unit pages) with `streams` write
/// streams and 37.5 % spare: 6 spare blocks per plane, room for the GC threshold (2), GC's open
/// block and up to three streams' open blocks.
fn tiny_streams(streams: u32, policy: StreamPolicy) -> SsdConfig {
    let mut cfg = tiny("greedy", 0);
    cfg.ftl.over_provisioning = 0.375;
    cfg.ftl.streams = streams;
    cfg.ftl.stream_policy = policy;
    cfg
}

/// Every valid unit of a host block belongs to the block's stream (what `check` also holds),
/// and no stream-0 block holds data of another stream.
fn blocks_hold_one_stream(ftl: &Ftl) {
    ftl.check().unwrap();
    let upb = ftl.geo.units_per_block();
    for b in 0..ftl.blocks().len() as u32 {
        let owner = ftl.block_stream(b).unwrap();
        if owner == GC_STREAM {
            continue;
        }
        for pun in b * upb..(b + 1) * upb {
            let lpn = ftl.p2l_at(pun);
            if lpn != UNMAPPED {
                let st = ftl.streams.as_ref().unwrap();
                assert_eq!(st.lpn_stream[lpn as usize], owner, "block {b}, lpn {lpn}");
            }
        }
    }
}

/// Hand-worked: a cold set written once (lpns 16..316, stream 1) interleaved with a hot set of
/// 16 units rewritten 50 times (stream 0), 1100 unit writes on 512 physical units, so GC runs
/// while the blocks written in the interleaved part (900 units) still hold cold data.
/// With one stream every block mixes the two, and GC must move cold data out of blocks whose
/// hot data died. With two, a cold block is never stale (never a GC candidate), so the cold
/// stream's GC moves are exactly 0 and its write amplification exactly 1; and a hot block holds
/// at most the 16 hot units, so GC finds nearly empty victims.
#[test]
fn hot_and_cold_streams_never_share_a_block_and_cold_data_is_never_moved() {
    let play = |ftl: &mut Ftl, cold_stream: u8| {
        ftl.set_instant(true);
        // Rounds of one cold write and two hot ones: a period of 3 against the stripe's 4
        // planes, so that with one stream every plane's blocks get both.
        for i in 0..400u64 {
            if i < 300 {
                ftl.write_in(16 + i, cold_stream).unwrap();
            }
            ftl.write_in((2 * i) % 16, 0).unwrap();
            ftl.write_in((2 * i + 1) % 16, 0).unwrap();
        }
    };
    let mut one = Ftl::new(&tiny_streams(1, StreamPolicy::Host), 1);
    play(&mut one, 0);
    one.check().unwrap();
    assert!(
        one.stream_stats().is_none(),
        "one stream: no per-stream counters"
    );
    let mut two = Ftl::new(&tiny_streams(2, StreamPolicy::Host), 1);
    play(&mut two, 1);
    blocks_hold_one_stream(&two);
    let st = two.stream_stats().unwrap();
    assert_eq!(st[1].host_units_written, 300);
    assert_eq!(st[0].host_units_written, 800);
    assert_eq!(st[1].gc_units_moved, 0, "cold data moved: {st:?}");
    assert!(two.stats.gc_runs > 0, "GC never ran");
    // The per-stream counts add up to the FTL's.
    assert_eq!(
        st[0].gc_units_moved + st[1].gc_units_moved,
        two.stats.gc_units_moved
    );
    assert_eq!(st[0].host_units_written + st[1].host_units_written, 1100);
    // Hot blocks die within a few rounds (16 hot units, all rewritten every 8 rounds), so GC
    // always finds an empty victim: with two streams it moves nothing at all (measured: 0).
    assert_eq!(two.stats.gc_units_moved, 0);
    // With one stream every block holds cold data, and GC must move it (measured: 318 units
    // in 125 collections, a write amplification of 1418 / 1100 = 1.29).
    assert!(one.stats.gc_units_moved > 100, "{:?}", one.stats);
    for lpn in 0..316 {
        assert!(two.lookup(lpn).is_some(), "lpn {lpn} lost");
    }
}

/// The streams of the data in block `b`'s valid units.
fn streams_in_block(ftl: &Ftl, b: u32) -> std::collections::BTreeSet<u8> {
    let upb = ftl.geo.units_per_block();
    let st = ftl.streams.as_ref().unwrap();
    (b * upb..(b + 1) * upb)
        .map(|pun| ftl.p2l_at(pun))
        .filter(|&lpn| lpn != UNMAPPED)
        .map(|lpn| st.lpn_stream[lpn as usize])
        .collect()
}

/// `ftl.gc.per_stream`: GC moves each unit into the GC block of the stream that wrote it. Two
/// sets rewritten at random — a cold set of 200 units in stream 1, a hot set of 100 rewritten
/// four times as often in stream 0 — leave valid data of both streams in victims.
/// With the shared GC block moved hot and cold data meet again in a GC block; with a GC block
/// per stream no block ever holds two streams' data, GC blocks included.
#[test]
fn per_stream_gc_keeps_moved_data_with_its_stream() {
    // Plays the writes; returns how many times (checked every 10 rounds) a block held two
    // streams' data, and whether that block was a shared GC block each time.
    let play = |ftl: &mut Ftl| {
        ftl.set_instant(true);
        let mut mixed = Vec::new();
        let mut rng = crate::sim::Rng::stream(1, "per-stream gc test");
        for i in 0..1500u64 {
            ftl.write_in(100 + rng.below(200), 1).unwrap();
            for _ in 0..2 {
                ftl.write_in(rng.below(100), 0).unwrap();
            }
            if i % 10 == 9 {
                ftl.check().unwrap();
                for b in 0..ftl.blocks().len() as u32 {
                    if streams_in_block(ftl, b).len() > 1 {
                        mixed.push(ftl.block_stream(b) == Some(GC_STREAM));
                    }
                }
            }
        }
        mixed
    };
    let mut shared = Ftl::new(&tiny_streams(2, StreamPolicy::Host), 1);
    let mixed = play(&mut shared);
    assert!(!mixed.is_empty(), "the shared GC block never mixed streams");
    assert!(mixed.iter().all(|&gc| gc), "only GC blocks mix");

    let mut cfg = tiny_streams(2, StreamPolicy::Host);
    cfg.ftl.gc.per_stream = true;
    let mut apart = Ftl::new(&cfg, 1);
    assert_eq!(
        play(&mut apart),
        Vec::<bool>::new(),
        "a block held two streams' data"
    );
    blocks_hold_one_stream(&apart);
    for b in 0..apart.blocks().len() as u32 {
        assert_ne!(apart.block_stream(b), Some(GC_STREAM), "block {b}");
    }
    let st = apart.stream_stats().unwrap();
    assert!(
        st[0].gc_units_moved > 0 && st[1].gc_units_moved > 0,
        "GC moved both streams' data: {st:?}"
    );
    for lpn in 0..300 {
        assert!(apart.lookup(lpn).is_some(), "lpn {lpn} lost");
    }
}

/// Hot-cold: a unit's first write is cold (stream 0); a rewrite within the window is hot
/// (stream 1); a rewrite after more than the window's writes is cold again.
#[test]
fn hot_cold_classifies_by_the_distance_since_the_last_write() {
    let mut cfg = tiny_streams(2, StreamPolicy::HotCold);
    cfg.ftl.hot_window = Some(4);
    let mut ftl = Ftl::new(&cfg, 1);
    let counts = |ftl: &Ftl| {
        let s = ftl.stream_stats().unwrap();
        (s[0].host_units_written, s[1].host_units_written)
    };
    // Clock 1: lpn 0, first write: cold. Clocks 2-4: lpns 1-3, cold.
    for lpn in 0..4 {
        ftl.write_in(lpn, 0).unwrap();
    }
    assert_eq!(counts(&ftl), (4, 0));
    // Clock 5: lpn 0 again, 4 writes after its last (clock 1): within the window, hot.
    let pun = ftl.write_in(0, 0).unwrap();
    assert_eq!(counts(&ftl), (4, 1));
    assert_eq!(ftl.block_stream(ftl.geo.block_of_unit(pun)), Some(1));
    // Clocks 6-10: lpns 4-8; clock 11: lpn 1, last written at clock 2, 9 writes ago: cold.
    for lpn in 4..9 {
        ftl.write_in(lpn, 0).unwrap();
    }
    let pun = ftl.write_in(1, 0).unwrap();
    assert_eq!(counts(&ftl), (10, 1));
    assert_eq!(ftl.block_stream(ftl.geo.block_of_unit(pun)), Some(0));
    // The host's hint is passed over: the policy decides.
    ftl.write_in(1, 1).unwrap();
    assert_eq!(counts(&ftl), (10, 2));
    blocks_hold_one_stream(&ftl);
}

/// The open blocks of streams beyond the first count toward a plane's room, as GC's does: a
/// plane whose second stream opened a block is no more urgent than before.
#[test]
fn a_second_streams_open_block_leaves_urgency_as_it_was() {
    let cfg = tiny_streams(2, StreamPolicy::Host);
    let mut ftl = Ftl::new(&cfg, 3);
    let plane = 0u32;
    // Place a unit of `stream` in the plane and map an lpn there, as a write would (an
    // unmapped unit would be stale data, and GC would take the block).
    let mut next_lpn = 0u64;
    let mut put = |ftl: &mut Ftl, stream: u8| {
        let pun = ftl
            .alloc_in_plane(plane, Stream::Host(stream), true)
            .unwrap()
            .unwrap();
        ftl.map(next_lpn, pun);
        ftl.stream_written(next_lpn, stream);
        next_lpn += 1;
    };
    // Three free blocks (urgent_free_blocks = 1; a host write leaves the last one to GC).
    while ftl.planes[plane as usize].free.len() > 3 {
        ftl.planes[plane as usize].free.pop();
    }
    assert_eq!(ftl.plane_urgency(plane), Urgency::None);
    put(&mut ftl, 1);
    assert_eq!(ftl.planes[plane as usize].free.len(), 2);
    put(&mut ftl, 0);
    assert_eq!(ftl.planes[plane as usize].free.len(), 1);
    // One free block (8 units) and stream 1's 7 units of room: 15 > 8, not urgent; it would be
    // if that room did not count.
    assert_eq!(ftl.plane_urgency(plane), Urgency::None);
    // Filling stream 1's block takes its room away: only the free block is left (stream 0's
    // open block does not count, as before streams).
    let upb = ftl.geo.units_per_block();
    for _ in 1..upb {
        put(&mut ftl, 1);
    }
    assert_eq!(ftl.plane_urgency(plane), Urgency::Hard);
    blocks_hold_one_stream(&ftl);
}

/// A stream's open block chosen as a GC victim is closed: the stream opens a new one.
#[test]
fn gc_closes_a_streams_open_block_it_collects() {
    let cfg = tiny_streams(3, StreamPolicy::Host);
    let mut ftl = Ftl::new(&cfg, 5);
    ftl.set_instant(true);
    // Stream 2 rewrites one unit: its open blocks hold mostly stale data.
    for _ in 0..600 {
        ftl.write_in(7, 2).unwrap();
        blocks_hold_one_stream(&ftl);
    }
    assert!(ftl.stats.gc_runs > 0);
    assert_eq!(ftl.stream_stats().unwrap()[2].host_units_written, 600);
}

pub(super) fn ops(logical: u64, streams: u8) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..logical, 0..streams).prop_map(|(l, s)| Op::WriteIn(l, s)),
        1 => (0..logical).prop_map(Op::Trim),
        3 => any::<usize>().prop_map(Op::Erase),
    ];
    proptest::collection::vec(op, 1..2000)
}

/// `tests.rs`'s oracle, with writes in random streams (its `Ftl::check` after every step also
/// finds a block that mixes streams); at the end GC's moves, counted by stream, add up.
fn run_streams(cfg: &SsdConfig, ops: &[Op]) -> std::result::Result<(), TestCaseError> {
    let ftl = run_oracle_on(cfg, ops)?;
    let st = ftl.stream_stats().unwrap();
    prop_assert_eq!(
        st.iter().map(|s| s.gc_units_moved).sum::<u64>(),
        ftl.stats.gc_units_moved
    );
    if cfg.ftl.gc.per_stream {
        // Every GC block belongs to a stream, so `check` held each to its stream's data.
        for b in 0..ftl.blocks().len() as u32 {
            prop_assert_ne!(ftl.block_stream(b), Some(GC_STREAM), "block {}", b);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn three_host_streams_match_the_oracle(ops in ops(300, 3)) {
        run_streams(&tiny_streams(3, StreamPolicy::Host), &ops)?;
    }

    #[test]
    fn per_stream_gc_matches_the_oracle(ops in ops(300, 2)) {
        let mut cfg = tiny_streams(2, StreamPolicy::Host);
        cfg.ftl.gc.per_stream = true;
        run_streams(&cfg, &ops)?;
    }

    #[test]
    fn hot_cold_matches_the_oracle(ops in ops(300, 1)) {
        let mut cfg = tiny_streams(2, StreamPolicy::HotCold);
        cfg.ftl.hot_window = Some(64);
        run_streams(&cfg, &ops)?;
    }
}
