//! FTL tests: an oracle model under random writes, trims and forced GC; wear levelling bounds.

use super::*;
use crate::config::SsdConfig;
use crate::error::Error;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A tiny drive so GC runs constantly: 4 planes × 16 blocks × 8 pages, 25 % spare.
pub(super) fn tiny(policy: &str, static_gap: u32) -> SsdConfig {
    let text = format!(
        r#"
[meta]
name = "tiny"
[nand]
cell = "slc"
channels = 2
packages_per_channel = 1
dies_per_package = 1
planes_per_die = 2
blocks_per_plane = 16
pages_per_block = 8
page_size = "4KiB"
[nand.timing]
read = ["25us"]
program = ["200us"]
erase = "1500us"
[nand.bus]
rate = "400MT/s"
[ftl]
over_provisioning = 0.25
[ftl.gc]
policy = "{policy}"
free_threshold = 0.1
urgent_free_blocks = 1
[ftl.wear_leveling]
dynamic = true
static_gap = {static_gap}
[interface]
kind = "nvme"
link = "pcie3x4"
io_queues = 1
queue_depth = 64
mdts = "128KiB"
interrupt = "msix"
"#
    );
    SsdConfig::from_toml_str(&text, "tiny").unwrap()
}

#[derive(Clone, Debug)]
pub(super) enum Op {
    Write(u64),
    /// A write in host write stream `.1` (`ftl.streams`).
    WriteIn(u64, u8),
    Trim(u64),
    /// Let the "controller" finish one pending erase (index modulo the pending list).
    Erase(usize),
    /// The host leaves the device idle (true) or comes back (background GC).
    Idle(bool),
}

fn ops(logical: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..logical).prop_map(Op::Write),
        1 => (0..logical).prop_map(Op::Trim),
        3 => any::<usize>().prop_map(Op::Erase),
    ];
    proptest::collection::vec(op, 1..2500)
}

/// As `ops`, with idle periods in between.
fn ops_with_idle(logical: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..logical).prop_map(Op::Write),
        1 => (0..logical).prop_map(Op::Trim),
        3 => any::<usize>().prop_map(Op::Erase),
        1 => any::<bool>().prop_map(Op::Idle),
    ];
    proptest::collection::vec(op, 1..2500)
}

/// `tiny` with half its blocks spare and background GC on: GC starts at 2 free blocks per
/// plane, and idle GC works up to 4.
fn tiny_background() -> SsdConfig {
    let mut cfg = tiny("greedy", 4);
    cfg.ftl.over_provisioning = 0.5;
    cfg.ftl.gc.background = true;
    cfg
}

/// Plays the controller in timed mode: applies GC moves to a content model at once and
/// finishes erases when the test says so. Checks that every live logical unit is found, with
/// its latest version, at the physical unit the map names.
fn run_oracle(policy: &str, ops: &[Op]) -> std::result::Result<(), TestCaseError> {
    run_oracle_on(&tiny(policy, 4), ops).map(drop)
}

/// The oracle run on `cfg`; returns the FTL for further checks.
pub(super) fn run_oracle_on(
    cfg: &SsdConfig,
    ops: &[Op],
) -> std::result::Result<Ftl, TestCaseError> {
    let mut ftl = Ftl::new(cfg, 9);
    let logical = ftl.logical_units();
    let mut content: Vec<Option<(u64, u64)>> = vec![None; ftl.geo.units() as usize];
    let mut oracle: BTreeMap<u64, u64> = BTreeMap::new();
    let mut pending: Vec<(u32, u32, u32)> = Vec::new();
    let mut version = 0u64;
    let drain = |ftl: &mut Ftl,
                 content: &mut Vec<Option<(u64, u64)>>,
                 pending: &mut Vec<(u32, u32, u32)>| {
        for task in ftl.tasks.drain(..) {
            for (from, to, _) in task.moves {
                content[to as usize] = content[from as usize];
            }
            if task.block != NONE {
                pending.push((task.plane, task.block, task.epoch));
            }
        }
    };
    for op in ops {
        match *op {
            Op::Write(lpn) | Op::WriteIn(lpn, _) => {
                version += 1;
                let stream = match *op {
                    Op::WriteIn(_, s) => s,
                    _ => 0,
                };
                let pun = ftl
                    .write_in(lpn % logical, stream)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                drain(&mut ftl, &mut content, &mut pending);
                content[pun as usize] = Some((lpn % logical, version));
                oracle.insert(lpn % logical, version);
            }
            Op::Trim(lpn) => {
                ftl.trim(lpn % logical);
                oracle.remove(&(lpn % logical));
            }
            Op::Idle(idle) => {
                ftl.set_idle(idle)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                drain(&mut ftl, &mut content, &mut pending);
            }
            Op::Erase(i) => {
                if !pending.is_empty() {
                    let (plane, block, epoch) = pending.remove(i % pending.len());
                    ftl.erase_done(plane, block, epoch)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    drain(&mut ftl, &mut content, &mut pending);
                }
            }
        }
        ftl.check().map_err(TestCaseError::fail)?;
    }
    for lpn in 0..logical {
        match (oracle.get(&lpn), ftl.lookup(lpn)) {
            (None, None) => {}
            (Some(&v), Some(pun)) => {
                prop_assert_eq!(content[pun as usize], Some((lpn, v)), "lpn {}", lpn)
            }
            (want, got) => prop_assert!(false, "lpn {}: oracle {:?}, ftl {:?}", lpn, want, got),
        }
    }
    Ok(ftl)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn greedy_matches_oracle(ops in ops(384)) {
        run_oracle("greedy", &ops)?;
    }

    #[test]
    fn cost_benefit_matches_oracle(ops in ops(384)) {
        run_oracle("cost-benefit", &ops)?;
    }

    #[test]
    fn random_policy_matches_oracle(ops in ops(384)) {
        run_oracle("random", &ops)?;
    }

    #[test]
    fn background_gc_matches_oracle(ops in ops_with_idle(256)) {
        run_oracle_on(&tiny_background(), &ops)?;
    }
}

/// Background GC: idle planes collect up to its level (4 free blocks here, against GC's 2),
/// those collections are counted, and once the host is back no new victim starts above GC's
/// own threshold.
#[test]
fn idle_gc_collects_up_to_its_level_and_stops_when_the_host_returns() {
    let cfg = tiny_background();
    let mut ftl = Ftl::new(&cfg, 5);
    assert_eq!((ftl.gc_threshold_blocks, ftl.background_blocks), (2, 4));
    ftl.precondition(true, 3.0, 7).unwrap();
    let short = |ftl: &Ftl| {
        (0..ftl.geo.planes())
            .filter(|&p| ftl.free_blocks(p) < 4)
            .count()
    };
    assert!(
        short(&ftl) > 0,
        "preconditioning leaves planes below 4 free blocks"
    );
    let finish = |ftl: &mut Ftl| {
        // Play the controller: every task's erase completes, which may start the next victim.
        while !ftl.tasks.is_empty() {
            for t in std::mem::take(&mut ftl.tasks) {
                if t.block != NONE {
                    ftl.erase_done(t.plane, t.block, t.epoch).unwrap();
                }
            }
        }
    };
    // Busy: GC's own threshold is met, nothing starts.
    ftl.set_idle(false).unwrap();
    assert!(ftl.tasks.is_empty());
    let runs_before = ftl.stats.gc_runs;
    ftl.set_idle(true).unwrap();
    let started = ftl.tasks.len();
    assert!(started > 0);
    finish(&mut ftl);
    assert_eq!(
        short(&ftl),
        0,
        "idle GC works every plane up to 4 free blocks"
    );
    assert!(ftl.stats.background_gc_runs >= started as u64);
    assert_eq!(
        ftl.stats.background_gc_runs,
        ftl.stats.gc_runs - runs_before
    );
    ftl.check().unwrap();
    // Back to work: writes use up the free blocks; only GC's threshold starts victims again.
    ftl.set_idle(false).unwrap();
    let runs = ftl.stats.background_gc_runs;
    let logical = ftl.logical_units();
    for i in 0..4 * logical {
        ftl.write((i * 7919) % logical).unwrap();
        finish(&mut ftl);
    }
    assert!(ftl.stats.gc_runs > runs, "foreground GC ran");
    assert_eq!(ftl.stats.background_gc_runs, runs);
    ftl.check().unwrap();
}

#[test]
fn gc_runs_and_keeps_every_valid_unit_under_heavy_overwrite() {
    let cfg = tiny("greedy", 0);
    let mut ftl = Ftl::new(&cfg, 1);
    let n = ftl.logical_units();
    ftl.precondition(true, 20.0, 3).unwrap();
    assert!(ftl.stats.gc_runs > 0, "GC never ran");
    assert!(ftl.stats.erases > 0);
    ftl.check().unwrap();
    for lpn in 0..n {
        assert!(ftl.lookup(lpn).is_some(), "lpn {lpn} lost");
    }
    // Every physical write is a host write or a GC move.
    let programmed: u64 = ftl.stats.host_units_written + ftl.stats.gc_units_moved;
    assert!(programmed >= ftl.stats.host_units_written);
}

/// The widest erase-count spread within one plane (static WL works per plane, as GC does).
fn erase_spread(ftl: &Ftl) -> u32 {
    let bpp = ftl.geo.blocks_per_plane as usize;
    ftl.blocks()
        .chunks(bpp)
        .map(|plane| {
            let max = plane.iter().map(|b| b.erase_count).max().unwrap();
            let min = plane.iter().map(|b| b.erase_count).min().unwrap();
            max - min
        })
        .max()
        .unwrap()
}

/// Hot/cold workload: after a fill, 95 % of writes go to 3 % of the space.
fn skewed(static_gap: u32) -> Ftl {
    let cfg = tiny("greedy", static_gap);
    let mut ftl = Ftl::new(&cfg, 5);
    ftl.set_instant(true);
    let n = ftl.logical_units();
    for lpn in 0..n {
        ftl.write(lpn).unwrap();
    }
    let hot = (n * 3 / 100).max(1);
    let mut rng = crate::sim::Rng::stream(5, "test.skew");
    for _ in 0..60_000 {
        let lpn = if rng.below(100) < 95 {
            rng.below(hot)
        } else {
            rng.below(n)
        };
        ftl.write(lpn).unwrap();
        // Instant mode has no controller; let static WL look after every write.
        for p in 0..ftl.geo.planes() {
            ftl.maybe_wear_level(p).unwrap();
        }
    }
    ftl.check().unwrap();
    ftl
}

#[test]
fn static_wear_levelling_bounds_the_erase_spread() {
    let without = skewed(0);
    let with = skewed(8);
    let (a, b) = (erase_spread(&without), erase_spread(&with));
    assert!(with.stats.wl_migrations > 0);
    // Bounded by the gap plus the blocks' own progress between checks.
    assert!(b <= 8 + 4, "spread with static WL {b} exceeds the gap");
    assert!(a > b, "static WL did not narrow the spread ({a} vs {b})");
}

#[test]
fn trim_unmaps_and_frees_space() {
    let cfg = tiny("greedy", 0);
    let mut ftl = Ftl::new(&cfg, 1);
    ftl.set_instant(true);
    ftl.write(7).unwrap();
    assert!(ftl.lookup(7).is_some());
    ftl.trim(7);
    assert!(ftl.lookup(7).is_none());
    assert_eq!(ftl.stats.trimmed_units, 1);
    ftl.check().unwrap();
}

#[test]
fn fast_fill_equals_writing_every_unit_in_order() {
    let mut tiny_superblock = tiny("greedy", 0);
    tiny_superblock.ftl.superblock_planes = Some(2);
    let small_superblock =
        |d: u32| SsdConfig::resolve("small-tlc", &[format!("ftl.superblock_planes={d}")]).unwrap();
    // 16 KiB pages of four 4 KiB map units; 1,538 logical units leave the last page half full.
    let mut tiny_units = tiny("greedy", 0);
    tiny_units.ftl.over_provisioning = 0.249;
    tiny_units.nand.page_size = crate::config::units::Bytes(16 << 10);
    tiny_units.ftl.map_unit = Some(crate::config::units::Bytes(4 << 10));
    assert_eq!(tiny_units.logical_units(), 1538);
    for (cfg, name) in [
        (tiny("greedy", 0), "tiny"),
        (
            tiny_units,
            "tiny, 4 map units per page, the last page part-filled",
        ),
        (SsdConfig::resolve("small-tlc", &[]).unwrap(), "small-tlc"),
        (tiny_superblock, "tiny, superblocks of 2 planes"),
        (small_superblock(4), "small-tlc, superblocks of 4 planes"),
        (small_superblock(1), "small-tlc, superblocks of 1 plane"),
    ] {
        let mut fast = Ftl::new(&cfg, 1);
        assert!(
            fast.fill_fast(&mut || true).unwrap(),
            "{name}: fast fill refused"
        );
        let mut slow = Ftl::new(&cfg, 1);
        slow.set_instant(true);
        for lpn in 0..slow.logical_units() {
            slow.write(lpn).unwrap();
        }
        assert_eq!(maps(&fast), maps(&slow), "{name}: maps differ");
        assert_eq!(fast.programmed_bits(), slow.programmed_bits(), "{name}");
        assert_eq!(fast.cursor, slow.cursor, "{name}: stripe cursor");
        for (a, b) in fast.blocks.iter().zip(slow.blocks.iter()) {
            assert_eq!(
                (a.state, a.valid, a.write_ptr, a.last_write),
                (b.state, b.valid, b.write_ptr, b.last_write),
                "{name}"
            );
        }
        for (a, b) in fast.planes.iter().zip(slow.planes.iter()) {
            assert_eq!(
                (a.free.to_vec(), a.host_open, a.gc_open),
                (b.free.to_vec(), b.host_open, b.gc_open),
                "{name}"
            );
        }
        fast.check().unwrap();
        // Entries the fill never wrote read as its layout until overwritten, moved by GC or
        // trimmed; from then on both drives must stay the same.
        fast.set_instant(true);
        let n = fast.logical_units();
        let mut rng = crate::sim::Rng::stream(5, "test");
        for k in 0..3 * n {
            let lpn = rng.below(n);
            if k % 17 == 0 {
                fast.trim(lpn);
                slow.trim(lpn);
            } else {
                fast.write(lpn).unwrap();
                slow.write(lpn).unwrap();
            }
        }
        assert!(fast.stats.gc_units_moved > 0, "{name}: no GC");
        assert_eq!(
            maps(&fast),
            maps(&slow),
            "{name}: maps differ after overwrites"
        );
        assert_eq!(fast.programmed_bits(), slow.programmed_bits(), "{name}");
        fast.check().unwrap();
    }
}

/// The map and the reverse map as a reader sees them.
fn maps(ftl: &Ftl) -> (Vec<u32>, Vec<u32>) {
    let l2p = (0..ftl.l2p.len() as u64)
        .map(|lpn| ftl.l2p_at(lpn))
        .collect();
    let p2l = (0..ftl.p2l.len() as u32)
        .map(|pun| ftl.p2l_at(pun))
        .collect();
    (l2p, p2l)
}

/// Static placement: after a fill and random overwrites (GC included), every logical page sits
/// on the plane its number picks; dynamic placement spreads the same writes elsewhere.
#[test]
fn static_placement_keeps_each_logical_page_on_its_plane() {
    let planes_of = |placement: &str| {
        let mut cfg = tiny("greedy", 0);
        cfg.ftl.placement = match placement {
            "static" => crate::config::Placement::Static,
            _ => crate::config::Placement::Dynamic,
        };
        let mut ftl = Ftl::new(&cfg, 3);
        ftl.precondition(true, 3.0, 11).unwrap();
        ftl.check().unwrap();
        assert!(ftl.stats.gc_runs > 0, "GC ran");
        let upp = ftl.geo.units_per_page as u64;
        let n = ftl.stripe.len() as u64;
        (0..ftl.logical_units())
            .filter(|&lpn| {
                let pun = ftl.lookup(lpn).unwrap();
                let plane = ftl.geo.plane_of_block(ftl.geo.block_of_unit(pun));
                plane != ftl.stripe[((lpn / upp) % n) as usize]
            })
            .count()
    };
    assert_eq!(planes_of("static"), 0);
    assert!(planes_of("dynamic") > 0);
}

/// Opening a GC block moves a block's room from the free list into that block: the plane is no
/// shorter of space, so its urgency must not change (counted in free blocks it did, and urgency
/// then lasted until GC had won a whole block back, several victims later).
#[test]
fn opening_a_gc_block_leaves_urgency_as_it_was() {
    let cfg = tiny("greedy", 0);
    let mut ftl = Ftl::new(&cfg, 3);
    let upb = ftl.geo.units_per_block();
    let plane = 0;
    // Two free blocks, none open for GC: urgent_free_blocks = 1, so not urgent.
    while ftl.planes[plane].free.len() > 2 {
        ftl.planes[plane].free.pop();
    }
    assert_eq!(ftl.plane_urgency(plane as u32), Urgency::None);
    // GC takes one of them and writes one unit into it: 1 block + (upb − 1) units of room.
    let gc = ftl.alloc_in_plane(plane as u32, Stream::Gc, false).unwrap();
    assert!(gc.is_some());
    assert_eq!(ftl.planes[plane].free.len(), 1);
    assert_eq!(ftl.plane_urgency(plane as u32), Urgency::None);
    // Once the GC block is full, only the one free block is left: urgent.
    for _ in 1..upb {
        ftl.alloc_in_plane(plane as u32, Stream::Gc, false).unwrap();
    }
    assert_eq!(ftl.planes[plane].gc_open, NONE);
    assert_eq!(ftl.plane_urgency(plane as u32), Urgency::Hard);
}

/// `gc-aware` placement: once a page is full the stripe passes over a plane whose GC is urgent;
/// when every plane is urgent it keeps to round robin.
#[test]
fn gc_aware_placement_passes_over_urgent_planes() {
    let mut cfg = tiny("greedy", 0);
    cfg.ftl.placement = crate::config::Placement::GcAware;
    // Urgent at two free blocks, so that an urgent plane can still take host writes (they
    // leave the last block to GC).
    cfg.ftl.gc.urgent_free_blocks = 2;
    cfg.ftl.gc.hard_free_blocks = 2;
    let mut ftl = Ftl::new(&cfg, 3);
    let upp = ftl.geo.units_per_page as u64;
    let n = ftl.stripe.len();
    let plane_of = |ftl: &Ftl, pun: u32| ftl.geo.plane_of_block(ftl.geo.block_of_unit(pun));
    // Make the stripe's second plane urgent (two free blocks, no GC block open).
    let urgent = ftl.stripe[1];
    while ftl.planes[urgent as usize].free.len() > 2 {
        ftl.planes[urgent as usize].free.pop();
    }
    assert_ne!(ftl.plane_urgency(urgent), Urgency::None);
    let mut planes = Vec::new();
    for page in 0..n as u64 {
        for u in 0..upp {
            let pun = ftl.write(page * upp + u).unwrap();
            if u == 0 {
                planes.push(plane_of(&ftl, pun));
            }
        }
    }
    assert_eq!(planes[0], ftl.stripe[0]);
    assert!(!planes.contains(&urgent), "{planes:?} skip plane {urgent}");
    // Every plane urgent: round robin as before.
    let mut ftl = Ftl::new(&cfg, 3);
    for p in 0..n {
        while ftl.planes[p].free.len() > 2 {
            ftl.planes[p].free.pop();
        }
    }
    let first = ftl.write(0).unwrap();
    for u in 1..upp {
        ftl.write(u).unwrap();
    }
    let second = ftl.write(upp).unwrap();
    assert_eq!(plane_of(&ftl, first), ftl.stripe[0]);
    assert_eq!(plane_of(&ftl, second), ftl.stripe[1]);
}

/// Cached mapping on the tiny drive (384 logical units, 4 KiB units with 512 B entries: 8 per
/// translation page, so 48 translation pages), filled: GC moves translation pages like data,
/// setting their GTD entries, and its moves of data units, as the host's writes, ask for
/// updates of their pages; preconditioning asks for none.
#[test]
fn gc_moves_translation_pages_and_asks_for_map_updates() {
    let mut cfg = tiny("greedy", 0);
    cfg.ftl.mapping = crate::config::MappingKind::Cached;
    cfg.ftl.mapping_cache = Some(crate::config::units::Bytes(8192));
    cfg.ftl.mapping_entry = Some(crate::config::units::Bytes(512));
    let (per_page, pages) = cfg.translation_pages().unwrap();
    let mut ftl = Ftl::cached(&cfg, 1);
    let n = ftl.logical_units();
    assert_eq!((per_page, pages, n), (8, 48, 384));
    ftl.precondition(true, 0.0, 1).unwrap();
    assert!(ftl.translation.pending_updates.is_empty());
    // Preconditioning wrote every translation page once, and they are no host data.
    let before: Vec<u32> = (0..48)
        .map(|p| ftl.translation_location(p).unwrap())
        .collect();
    assert_eq!(ftl.stats.host_units_written, n);
    // Timed random overwrites, the controller erasing at once, until the GC has run a while;
    // the translation pages of the data units GC moved.
    let mut rng = crate::sim::Rng::stream(9, "test");
    let mut moved_pages = std::collections::BTreeSet::new();
    let mut written_pages = std::collections::BTreeSet::new();
    while ftl.stats.gc_runs < 1000 {
        let lpn = rng.below(n);
        ftl.write(lpn).unwrap();
        written_pages.insert(lpn / per_page);
        for t in std::mem::take(&mut ftl.tasks) {
            for &(_, to, _) in &t.moves {
                let lpn = ftl.p2l_at(to) as u64;
                if lpn < n {
                    moved_pages.insert(lpn / per_page);
                }
            }
            if t.block != NONE {
                ftl.erase_done(t.plane, t.block, t.epoch).unwrap();
            }
        }
    }
    ftl.check().unwrap();
    let moved = (0..48)
        .filter(|&p| ftl.translation_location(p).unwrap() != before[p as usize])
        .count();
    assert!(moved > 0, "GC moved no translation page");
    // Nothing rewrote them: each still maps to a unit whose reverse entry names it.
    for p in 0..48u32 {
        let pun = ftl.translation_location(p).unwrap();
        assert_eq!(ftl.p2l_at(pun) as u64, n + p as u64);
    }
    // The pages of the data units GC moved and the host wrote ask for their updates (nothing
    // is cached: each a read-modify-write), once per page.
    let m = &ftl.translation;
    let mut want: Vec<u64> = m.pending_updates.iter().map(|&p| p as u64).collect();
    want.sort_unstable();
    want.dedup();
    assert!(!moved_pages.is_empty());
    assert_eq!(
        want.len(),
        m.pending_updates.len(),
        "one pending update per page"
    );
    let asked: std::collections::BTreeSet<u64> = want.into_iter().collect();
    assert!(
        moved_pages.is_subset(&asked),
        "a GC move asked for no update"
    );
    assert!(
        written_pages.is_subset(&asked),
        "a host write asked for no update"
    );
}

/// Hand-worked layout of `ftl.superblock_planes = 2` on tiny (stripe: channel 0 plane 0,
/// channel 1 plane 0, channel 0 plane 1, channel 1 plane 1; 8 pages per block): sequential
/// pages alternate between the first group's two planes down one block each (16 pages), then
/// the second group's, then the first group's next blocks.
#[test]
fn superblock_planes_fill_a_group_block_before_the_next_group() {
    let mut cfg = tiny("greedy", 0);
    cfg.ftl.superblock_planes = Some(2);
    let mut ftl = Ftl::new(&cfg, 1);
    ftl.set_instant(true);
    for lpn in 0..40 {
        ftl.write(lpn).unwrap();
    }
    let geo = ftl.geo.clone();
    let stripe = ftl.stripe.clone();
    let at = |lpn: usize| {
        let pun = ftl.l2p_at(lpn as u64);
        let block = geo.block_of_unit(pun);
        (
            geo.plane_of_block(block),
            geo.block_in_plane(pun),
            geo.page_in_block(pun),
        )
    };
    for lpn in 0..40usize {
        let (group, k) = match lpn {
            0..16 => (0, lpn),
            16..32 => (1, lpn - 16),
            _ => (0, lpn - 32 + 16),
        };
        let plane = stripe[group * 2 + k % 2];
        let (block, page) = ((k / 2) / 8, (k / 2) % 8);
        assert_eq!(
            at(lpn),
            (plane, block as u32, page as u32),
            "logical page {lpn}"
        );
    }
    ftl.check().unwrap();
}

/// The sequential fill of a fresh drive (the fast, plane-by-plane path) asks whether to go on:
/// on a 1 TiB drive it takes seconds, which Ctrl-C must not wait out.
#[test]
fn the_fast_fill_stops_when_asked() {
    let cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let mut ftl = Ftl::new(&cfg, 1);
    let mut asked = 0;
    let r = ftl.precondition_with(true, 0.0, None, 1, &mut || {
        asked += 1;
        asked < 3
    });
    assert!(matches!(r, Err(Error::Interrupted)), "{r:?}");
    assert_eq!(asked, 3);
}

/// The map tables take memory only where written: a sequential fill of a 1 TiB drive with 4 KiB
/// map units (2 GiB of map and reverse map) and a thousand random writes after it stay far below
/// the tables' size (the block records, 21 MB, are written whole; the programmed bits,
/// 64 MB of them, only where the run programmed: the fill's are said by the block records).
#[cfg(target_os = "linux")]
#[test]
fn a_filled_drive_costs_memory_only_where_written() {
    let rss = || crate::sim::mem::proc_kib_field("/proc/self/status", "VmRSS:").unwrap();
    let cfg = SsdConfig::resolve("seed004-64ch-mlc", &[]).unwrap();
    assert!(Ftl::table_bytes(&cfg) > 2_000_000_000);
    let before = rss();
    let mut ftl = Ftl::new(&cfg, 1);
    ftl.precondition(true, 0.0, 1).unwrap();
    let n = ftl.logical_units();
    let mut rng = crate::sim::Rng::stream(1, "test");
    for _ in 0..1000 {
        ftl.write(rng.below(n)).unwrap();
    }
    let grown = rss().saturating_sub(before);
    assert!(grown < 250_000_000, "grew by {grown} bytes");
    // The thousand writes went to a few open blocks per plane: a few pages of bits each.
    let bits = ftl.memory().programmed_bits_bytes;
    assert!(bits < 8 << 20, "programmed bits resident: {bits} bytes");
    assert_eq!(ftl.stats.host_units_written, n + 1000);
}
