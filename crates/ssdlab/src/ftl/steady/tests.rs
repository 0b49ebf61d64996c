use super::*;
use crate::config::GcPolicy;
use crate::ftl::tests::tiny;

/// 8 planes of 64 blocks of 64 pages, 12 % spare, greedy GC at 2 free blocks: large enough
/// for a steady WAF to mean something, small enough to overwrite to it unit by unit.
fn drive() -> SsdConfig {
    let mut cfg = tiny("greedy", 0);
    cfg.nand.channels = 4;
    cfg.nand.blocks_per_plane = 64;
    cfg.nand.pages_per_block = 256;
    cfg.ftl.over_provisioning = 0.10;
    cfg.ftl.gc.free_threshold = 0.03;
    cfg
}

/// Rank and select against counting bit by bit, on block sizes that do and do not divide
/// a word, with empty words and blocks.
#[test]
fn valid_places_rank_and_select_as_counting_says() {
    let mut rng = Rng::stream(9, "places");
    for (units_per_block, blocks, density) in [(64, 8, 2), (96, 7, 3), (40, 20, 5), (256, 3, 1)] {
        let units = units_per_block * blocks;
        let mut bits = vec![0u64; (units as usize).div_ceil(64)];
        let mut set = Vec::new();
        for u in 0..units {
            // Whole empty stretches as well as scattered places.
            if (u / 50) % 3 != 1 && rng.below(density) == 0 {
                bits[(u / 64) as usize] |= 1 << (u % 64);
                set.push(u);
            }
        }
        let places = ValidPlaces::new(bits);
        assert_eq!(places.count(), set.len() as u64);
        for (rank, &u) in set.iter().enumerate() {
            assert_eq!(places.select(rank as u32), u, "upb {units_per_block}");
            assert_eq!(places.rank(u), Some(rank as u32));
        }
        for u in (0..units).filter(|u| !set.contains(u)) {
            assert_eq!(places.rank(u), None);
        }
    }
}

/// GC's walk down a block, with its plane worked out once, gives unit by unit what
/// `lpn_of` works out from scratch, over every block of a steady-state drive (valid and
/// stale units, and the spare).
#[test]
fn lpn_in_plane_says_what_lpn_of_says() {
    let cfg = drive();
    let mut ftl = Ftl::new(&cfg, 4);
    ftl.reach_steady_state(&cfg, 4, &mut || true).unwrap();
    let dealt = ftl.fill.dealt().expect("dealt");
    let upb = ftl.geo.units_per_block();
    let mut dealt_units = 0;
    for block in 0..ftl.geo.blocks() {
        let first = block * upb;
        let plane = dealt.plane_of(first);
        for pun in first..first + upb {
            let lpn = dealt.lpn_in_plane(&plane, pun);
            assert_eq!(lpn, dealt.lpn_of(pun), "unit {pun}");
            dealt_units += (lpn != UNMAPPED) as u64;
        }
    }
    assert_eq!(dealt_units, ftl.logical_units());
}

/// WAF of `count` uniform random overwrites from the drive's state.
fn waf_of_overwrites(ftl: &mut Ftl, count: u64, seed: u64) -> f64 {
    let (host, moved) = (ftl.stats.host_units_written, ftl.stats.gc_units_moved);
    ftl.instant = true;
    let mut rng = Rng::stream(seed, "test");
    let n = ftl.logical_units();
    for _ in 0..count {
        ftl.write(rng.below(n)).unwrap();
    }
    let host = ftl.stats.host_units_written - host;
    (host + ftl.stats.gc_units_moved - moved) as f64 / host as f64
}

#[test]
fn the_copied_drive_keeps_every_unit_once_and_stays_sound_under_writes() {
    let cfg = drive();
    let mut ftl = Ftl::new(&cfg, 1);
    let steady = ftl.reach_steady_state(&cfg, 1, &mut || true).unwrap();
    assert!(steady.converged, "{steady:?}");
    // The layout is read in closed form: no map entry was written for it.
    assert!(ftl.l2p.iter().chain(&ftl.p2l).all(|&e| e == 0));
    ftl.check().unwrap();
    let n = ftl.logical_units();
    let mut seen = vec![false; ftl.geo.units() as usize];
    for lpn in 0..n {
        let pun = ftl.lookup(lpn).expect("every unit mapped") as usize;
        assert!(!seen[pun], "two units at {pun}");
        seen[pun] = true;
    }
    // The same seed gives the same drive.
    let mut again = Ftl::new(&cfg, 1);
    assert_eq!(
        again.reach_steady_state(&cfg, 1, &mut || true).unwrap(),
        steady
    );
    assert!((0..n).all(|lpn| again.lookup(lpn) == ftl.lookup(lpn)));
    // GC works on the copied blocks as on its own.
    waf_of_overwrites(&mut ftl, 3 * n, 2);
    ftl.check().unwrap();
    assert!((0..n).all(|lpn| ftl.lookup(lpn).is_some()));
}

/// `drive()` with `[reliability]`.
fn worn_drive(pe_limit: u32, factory_bad_block_rate: f64) -> SsdConfig {
    let mut cfg = drive();
    cfg.reliability = Some(crate::config::ReliabilityConfig {
        pe_limit: Some(pe_limit),
        factory_bad_block_rate,
        ..Default::default()
    });
    cfg
}

fn mean_erases(ftl: &Ftl) -> f64 {
    let good = ftl.blocks.iter().filter(|b| b.state != BlockState::Bad);
    let (n, sum) = good.fold((0u64, 0u64), |(n, s), b| (n + 1, s + b.erase_count as u64));
    sum as f64 / n as f64
}

/// With `[reliability]` the steady state's blocks carry the wear of the overwrites it
/// stands for: their mean erase count is that of the same drive overwritten unit by unit
/// as often as the model plane was, and SMART's Percentage Used shows it.
#[test]
fn the_steady_state_ages_the_blocks_as_the_overwrites_it_stands_for() {
    let cfg = worn_drive(1000, 0.0);
    let mut copied = Ftl::new(&cfg, 3);
    let steady = copied.reach_steady_state(&cfg, 3, &mut || true).unwrap();
    let mut overwritten = Ftl::new(&cfg, 3);
    overwritten.precondition(true, steady.overwrite, 3).unwrap();
    let (c, o) = (mean_erases(&copied), mean_erases(&overwritten));
    assert!(c > 1.0, "no wear: {c}");
    assert!(
        (c - o).abs() <= 0.05 * o,
        "copied {c:.3}, overwritten {o:.3}"
    );
    assert!((copied.percentage_used() - c / 1000.0 * 100.0).abs() < 1e-9);
    let w = copied.wear.as_ref().unwrap();
    assert_eq!((w.retired_blocks, w.factory_bad_blocks), (0, 0));
    assert!(!w.read_only);
    assert_eq!(copied.available_spare_percent(), 100.0);
    copied.check().unwrap();
}

/// Factory bad blocks: every plane gets the model plane's (the drive's plane 0's draw),
/// none holds data, the counts say so, and the drive writes on without touching them. An
/// endurance the overwrites would exhaust is a one-line error naming the field.
#[test]
fn the_steady_state_keeps_factory_bad_blocks_and_refuses_to_wear_out() {
    let cfg = worn_drive(1000, 0.03);
    let mut ftl = Ftl::new(&cfg, 5);
    ftl.reach_steady_state(&cfg, 5, &mut || true).unwrap();
    let bpp = ftl.geo.blocks_per_plane as usize;
    let bad_of = |p: usize| -> Vec<usize> {
        (0..bpp)
            .filter(|&b| ftl.blocks[p * bpp + b].state == BlockState::Bad)
            .collect()
    };
    let plane0 = bad_of(0);
    assert!(!plane0.is_empty());
    assert!((1..ftl.planes.len()).all(|p| bad_of(p) == plane0));
    let w = ftl.wear.clone().unwrap();
    assert_eq!(
        w.factory_bad_blocks,
        (plane0.len() * ftl.planes.len()) as u64
    );
    assert_eq!(
        w.good_blocks,
        ftl.blocks.len() as u64 - w.factory_bad_blocks
    );
    assert!(ftl
        .blocks
        .iter()
        .all(|b| b.state != BlockState::Bad || b.valid == 0));
    let n = ftl.logical_units();
    let mut rng = Rng::stream(6, "test");
    for _ in 0..2 * n {
        ftl.write_checked(rng.below(n)).unwrap().unwrap();
    }
    ftl.check().unwrap();
    assert!(ftl
        .blocks
        .iter()
        .all(|b| b.state != BlockState::Bad || b.write_ptr == 0 || b.erase_count >= 1000));

    let cfg = worn_drive(3, 0.0);
    let e = Ftl::new(&cfg, 5)
        .reach_steady_state(&cfg, 5, &mut || true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("reliability.pe_limit") && !e.contains('\n'),
        "{e}"
    );
}

/// The oracle: a drive overwritten unit by unit for 8 × its capacity is in the steady
/// state; the copied drive must write at its WAF from the first window on (a model plane
/// that did not overwrite reports WAF 1 and fails this).
#[test]
fn the_copied_drive_writes_at_the_waf_of_a_drive_overwritten_to_steady_state() {
    let cfg = drive();
    let mut overwritten = Ftl::new(&cfg, 3);
    overwritten.precondition(true, 8.0, 3).unwrap();
    let n = overwritten.logical_units();
    let window = n / 4;
    let (overwritten_valid, _) = valid_counts(&overwritten, 0);
    let reference = waf_of_overwrites(&mut overwritten, 2 * n, 4);

    let mut copied = Ftl::new(&cfg, 3);
    let steady = copied.reach_steady_state(&cfg, 3, &mut || true).unwrap();
    // The valid units per block as the overwrites leave them (deciles within 4 % of a block,
    // as for a skew below).
    let (copied_valid, _) = valid_counts(&copied, 0);
    let (c, o) = (deciles(&copied_valid), deciles(&overwritten_valid));
    assert!(
        apart(&c, &o, copied.geo.units_per_block()) <= 0.04,
        "{c:?} against {o:?}"
    );
    let first = waf_of_overwrites(&mut copied, window, 4);
    let later = waf_of_overwrites(&mut copied, 2 * n, 5);

    let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
    assert!(
        near(steady.waf, 0.05) && near(first, 0.10) && near(later, 0.05),
        "reference {reference:.3}, model plane {:.3}, first window {first:.3}, \
         later {later:.3}",
        steady.waf
    );
}

/// WAF of `count` uniform random overwrites, each in one of `handles` streams drawn
/// uniformly.
fn waf_with_handles(ftl: &mut Ftl, count: u64, handles: u64, seed: u64) -> f64 {
    let (host, moved) = (ftl.stats.host_units_written, ftl.stats.gc_units_moved);
    ftl.instant = true;
    let mut rng = Rng::stream(seed, "test");
    let n = ftl.logical_units();
    for _ in 0..count {
        let lpn = rng.below(n);
        ftl.write_in(lpn, rng.below(handles) as u8).unwrap();
    }
    let host = ftl.stats.host_units_written - host;
    (host + ftl.stats.gc_units_moved - moved) as f64 / host as f64
}

/// FDP: the drive itself is overwritten with its handles drawn uniformly; it must write at
/// the WAF of a drive filled and overwritten so for 8 × its capacity from the first window
/// on, hold every unit once, keep each block to one handle's host data (`check`), and
/// leave each handle its share of the data (within 5 %).
#[test]
fn an_fdp_drive_reaches_the_waf_of_one_overwritten_with_its_handles() {
    for (handles, groups) in [(2u64, 1u32), (3, 2)] {
        let ov: Vec<String> = [
            "nand.channels=2",
            "nand.dies_per_package=1",
            "nand.blocks_per_plane=80",
            "nand.pages_per_block=16",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("fdp.handles={handles}"),
            format!("fdp.reclaim_groups={groups}"),
        ])
        .collect();
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        let mut overwritten = Ftl::new(&cfg, 3);
        overwritten.precondition(true, 0.0, 3).unwrap();
        let n = overwritten.logical_units();
        waf_with_handles(&mut overwritten, 8 * n, handles, 4);
        let reference = waf_with_handles(&mut overwritten, 2 * n, handles, 5);

        let mut drive = Ftl::new(&cfg, 3);
        let steady = drive.reach_steady_state(&cfg, 3, &mut || true).unwrap();
        drive.check().unwrap();
        assert!((0..n).all(|lpn| drive.lookup(lpn).is_some()));
        let st = drive.streams.as_deref().unwrap();
        for h in 0..handles {
            let share = (0..n)
                .filter(|&l| st.lpn_stream[l as usize] as u64 == h)
                .count() as f64
                / n as f64;
            let want = 1.0 / handles as f64;
            assert!((share - want).abs() < 0.05 * want, "handle {h}: {share:.3}");
        }
        let mut again = Ftl::new(&cfg, 3);
        assert_eq!(
            again.reach_steady_state(&cfg, 3, &mut || true).unwrap(),
            steady
        );
        assert!((0..n).all(|lpn| again.lookup(lpn) == drive.lookup(lpn)));

        let first = waf_with_handles(&mut drive, n / 4, handles, 5);
        let later = waf_with_handles(&mut drive, 2 * n, handles, 6);
        drive.check().unwrap();
        let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
        assert!(
            near(steady.waf, 0.05) && near(first, 0.10) && near(later, 0.05),
            "{handles} handles: reference {reference:.3}, reached {steady:?}, first window \
             {first:.3}, later {later:.3}"
        );
    }
}

/// Plain write streams (`ftl.streams = 2`, with and without `ftl.gc.per_stream`) reach
/// theirs as FDP does: the drive converges to the WAF of one overwritten with its streams
/// drawn uniformly, holds every unit exactly once, keeps each host block to one stream's
/// data (and, with GC per stream, every GC block too), leaves each stream half the data,
/// and is the same for the same seed.
#[test]
fn a_drive_with_write_streams_reaches_the_waf_of_one_overwritten_with_them() {
    for per_stream in [false, true] {
        let ov: Vec<String> = [
            "nand.channels=2",
            "nand.dies_per_package=1",
            "nand.blocks_per_plane=80",
            "nand.pages_per_block=16",
            "ftl.streams=2",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("ftl.gc.per_stream={per_stream}")])
        .collect();
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        let mut overwritten = Ftl::new(&cfg, 3);
        overwritten.precondition(true, 0.0, 3).unwrap();
        let n = overwritten.logical_units();
        waf_with_handles(&mut overwritten, 8 * n, 2, 4);
        let reference = waf_with_handles(&mut overwritten, 2 * n, 2, 5);

        let mut drive = Ftl::new(&cfg, 3);
        let steady = drive.reach_steady_state(&cfg, 3, &mut || true).unwrap();
        assert!(steady.converged, "{steady:?}");
        drive.check().unwrap();
        let mut seen = vec![false; drive.geo.units() as usize];
        for lpn in 0..n {
            let pun = drive.lookup(lpn).expect("every unit mapped") as usize;
            assert!(!seen[pun], "two units at {pun}");
            seen[pun] = true;
        }
        let st = drive.streams.as_deref().unwrap();
        for s in 0..2u8 {
            let share =
                (0..n).filter(|&l| st.lpn_stream[l as usize] == s).count() as f64 / n as f64;
            assert!((share - 0.5).abs() < 0.025, "stream {s}: {share:.3}");
        }
        let upb = drive.geo.units_per_block();
        for b in 0..drive.blocks.len() as u32 {
            let owner = st.block_stream[b as usize];
            if owner == crate::ftl::GC_STREAM {
                assert!(!per_stream, "block {b}: GC's own with GC per stream");
                continue;
            }
            for pun in b * upb..(b + 1) * upb {
                let lpn = drive.p2l_at(pun);
                if lpn != UNMAPPED {
                    assert_eq!(st.lpn_stream[lpn as usize], owner, "block {b}, lpn {lpn}");
                }
            }
        }
        let mut again = Ftl::new(&cfg, 3);
        assert_eq!(
            again.reach_steady_state(&cfg, 3, &mut || true).unwrap(),
            steady
        );
        assert!((0..n).all(|lpn| again.lookup(lpn) == drive.lookup(lpn)));

        let first = waf_with_handles(&mut drive, n / 4, 2, 5);
        let later = waf_with_handles(&mut drive, 2 * n, 2, 6);
        drive.check().unwrap();
        let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
        assert!(
            near(steady.waf, 0.05) && near(first, 0.10) && near(later, 0.05),
            "GC per stream {per_stream}: reference {reference:.3}, reached {steady:?}, \
             first window {first:.3}, later {later:.3}"
        );
    }
}

/// With `[reliability]`, FDP's and write streams' steady state writes through the checked
/// path: the drive's blocks carry the wear of its overwrites, its factory bad blocks are
/// never written, every unit is mapped once, the same seed gives the same drive, and an
/// endurance the overwrites would exhaust is a one-line error naming the field.
#[test]
fn streams_reach_their_steady_state_through_the_wear_model() {
    for streams in ["fdp.handles=2", "ftl.streams=2"] {
        let cfg_with = |pe_limit: u32| {
            let ov: Vec<String> = [
                "nand.channels=2",
                "nand.dies_per_package=1",
                "nand.blocks_per_plane=80",
                "nand.pages_per_block=16",
                "reliability.factory_bad_block_rate=0.03",
                streams,
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([format!("reliability.pe_limit={pe_limit}")])
            .collect();
            SsdConfig::resolve("small-tlc", &ov).unwrap()
        };
        let cfg = cfg_with(1000);
        let mut drive = Ftl::new(&cfg, 7);
        let bad_before: Vec<usize> = (0..drive.blocks.len())
            .filter(|&b| drive.blocks[b].state == BlockState::Bad)
            .collect();
        assert!(!bad_before.is_empty(), "{streams}: no factory bad block");
        let steady = drive.reach_steady_state(&cfg, 7, &mut || true).unwrap();
        assert!(steady.converged, "{streams}: {steady:?}");
        drive.check().unwrap();
        let n = drive.logical_units();
        let mut seen = vec![false; drive.geo.units() as usize];
        for lpn in 0..n {
            let pun = drive.lookup(lpn).expect("every unit mapped") as usize;
            assert!(!seen[pun], "{streams}: two units at {pun}");
            seen[pun] = true;
        }
        assert!(bad_before
            .iter()
            .all(|&b| drive.blocks[b].write_ptr == 0 && drive.blocks[b].valid == 0));
        assert!(
            mean_erases(&drive) > 1.0,
            "{streams}: {}",
            mean_erases(&drive)
        );
        let w = drive.wear.as_ref().unwrap();
        assert_eq!(w.factory_bad_blocks, bad_before.len() as u64);
        assert_eq!(w.retired_blocks, 0);
        let mut again = Ftl::new(&cfg, 7);
        assert_eq!(
            again.reach_steady_state(&cfg, 7, &mut || true).unwrap(),
            steady
        );
        assert!((0..n).all(|lpn| again.lookup(lpn) == drive.lookup(lpn)));

        let cfg = cfg_with(3);
        let e = Ftl::new(&cfg, 7)
            .reach_steady_state(&cfg, 7, &mut || true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("reliability.pe_limit") && !e.contains('\n'),
            "{streams}: {e}"
        );
    }
}

/// WAF of `count` random overwrites skewed as `skew` says (None: uniform).
fn waf_of_skewed(ftl: &mut Ftl, count: u64, skew: Option<HotCold>, seed: u64) -> f64 {
    let (host, moved) = (ftl.stats.host_units_written, ftl.stats.gc_units_moved);
    ftl.instant = true;
    let mut rng = Rng::stream(seed, "test");
    let n = ftl.logical_units();
    let skew = skew.map(|h| Skew::over(h, n));
    for _ in 0..count {
        ftl.write(draw_overwrite(skew.as_ref(), &mut rng, n))
            .unwrap();
    }
    let host = ftl.stats.host_units_written - host;
    (host + ftl.stats.gc_units_moved - moved) as f64 / host as f64
}

/// The valid units of every block that holds data (full or open), sorted; and, with a skew,
/// of the hot ones.
fn valid_counts(ftl: &Ftl, hot: u64) -> (Vec<u32>, Vec<u32>) {
    let upb = ftl.geo.units_per_block();
    let mut all = Vec::new();
    let mut hots = Vec::new();
    for (b, blk) in ftl.blocks.iter().enumerate() {
        if blk.state == BlockState::Free || blk.state == BlockState::Bad {
            continue;
        }
        all.push(blk.valid);
        let first = b as u32 * upb;
        hots.push(
            (first..first + upb)
                .filter(|&p| (ftl.p2l_at(p) as u64) < hot)
                .count() as u32,
        );
    }
    all.sort_unstable();
    hots.sort_unstable();
    (all, hots)
}

fn deciles(v: &[u32]) -> Vec<u32> {
    (1..10).map(|d| v[v.len() * d / 10]).collect()
}

/// The largest difference of two decile lists, as a fraction of `of`.
fn apart(a: &[u32], b: &[u32], of: u32) -> f64 {
    let most = a
        .iter()
        .zip(b)
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap_or(0);
    most as f64 / of as f64
}

/// The oracle for skewed overwrites (80/20 and 90/10, greedy and cost-benefit GC): a drive
/// filled and overwritten unit by unit with the skew for 48 × its capacity is in the steady
/// state (its WAF still rose by under 1 % from 32 × to 64 × when this was written); the copied
/// drive must write at its WAF (2 × capacity of further skewed writes within 5 %, the first
/// quarter-capacity window within 10 %: a short window's WAF swings with where the planes'
/// collections stand) and lay its blocks out as the overwrites do: the deciles of the valid
/// units per block, and of the hot units per block, within 4 % and 6 % of a block (the
/// overwritten drive's own deciles move by up to 3 % and 4.7 % of a block between its states
/// at 8, 12, …, 64 × its capacity: the top decile of hot units per block, with cost-benefit
/// GC at 80/20, from 132 to 144 of 256).
#[test]
fn a_skewed_steady_state_writes_and_lies_as_a_drive_overwritten_with_the_skew() {
    for policy in [GcPolicy::Greedy, GcPolicy::CostBenefit] {
        for (h, w) in [(0.2, 0.8), (0.1, 0.9)] {
            let mut cfg = drive();
            cfg.ftl.gc.policy = policy;
            cfg.precondition.hot_fraction = Some(h);
            cfg.precondition.hot_write_fraction = Some(w);
            let hc = cfg.precondition.hot_cold();
            let mut overwritten = Ftl::new(&cfg, 3);
            overwritten
                .precondition_with(true, 48.0, hc, 3, &mut || true)
                .unwrap();
            let n = overwritten.logical_units();
            let hot = Skew::over(hc.unwrap(), n).hot;
            let (oa, oh) = valid_counts(&overwritten, hot);
            let reference = waf_of_skewed(&mut overwritten, 2 * n, hc, 4);

            let mut copied = Ftl::new(&cfg, 3);
            let steady = copied.reach_steady_state(&cfg, 3, &mut || true).unwrap();
            assert!(steady.converged, "{steady:?}");
            copied.check().unwrap();
            // Every unit once, the hot ones on hot places.
            let mut seen = vec![false; copied.geo.units() as usize];
            for lpn in 0..n {
                let pun = copied.lookup(lpn).expect("every unit mapped");
                assert!(!std::mem::replace(&mut seen[pun as usize], true));
                assert_eq!(copied.p2l_at(pun), lpn as u32);
            }
            let (ca, ch) = valid_counts(&copied, hot);
            let first = waf_of_skewed(&mut copied, n / 4, hc, 4);
            let later = waf_of_skewed(&mut copied, 2 * n, hc, 5);
            copied.check().unwrap();
            let upb = copied.geo.units_per_block();
            let (valid_apart, hot_apart) = (
                apart(&deciles(&ca), &deciles(&oa), upb),
                apart(&deciles(&ch), &deciles(&oh), upb),
            );
            let near = |x: f64, tol: f64| (x - reference).abs() <= tol * reference;
            assert!(
                near(first, 0.10) && near(later, 0.05) && valid_apart <= 0.04 && hot_apart <= 0.06,
                "{policy:?} {h}/{w}: reference {reference:.3}, reached {steady:?}, first window \
                 {first:.3}, later {later:.3}; valid per block {:?} against {:?}, hot {:?} \
                 against {:?}",
                deciles(&ca),
                deciles(&oa),
                deciles(&ch),
                deciles(&oh)
            );
        }
    }
}

/// The planes' host write pointers (plane-local unit offsets within their open blocks).
fn host_pointers(ftl: &Ftl) -> Vec<u32> {
    (ftl.planes.iter())
        .map(|p| ftl.blocks[p.host_open as usize].write_ptr)
        .collect()
}

/// A drive in long use does not have its planes' host blocks in step: the copy spreads their
/// write pointers evenly over the block (docs/ftl.md, Steady state), so collections start all
/// through a run, not all at once when a shared pointer crosses a block's end. On the layout
/// whose snapshots were exactly a block of host writes apart, every pointer stood at the same
/// unit and only one of the eight windows below collected.
#[test]
fn the_planes_open_blocks_stand_at_spread_pages_and_collect_from_the_first_writes() {
    let cfg = drive();
    let mut ftl = Ftl::new(&cfg, 6);
    ftl.reach_steady_state(&cfg, 6, &mut || true).unwrap();
    let upb = ftl.geo.units_per_block();
    let planes = ftl.planes.len() as u32;
    let mut ptrs = host_pointers(&ftl);
    ptrs.sort_unstable();
    ptrs.dedup();
    // One phase per plane (8 planes, 8 snapshots), an eighth of a block apart round the block.
    assert_eq!(ptrs.len() as u32, planes, "{ptrs:?}");
    let gaps = (ptrs.windows(2).map(|w| w[1] - w[0])).chain([ptrs[0] + upb - ptrs[ptrs.len() - 1]]);
    let step = upb / planes;
    assert!(
        gaps.clone().all(|g| g == step),
        "{:?}",
        gaps.collect::<Vec<_>>()
    );
    // An eighth of a block of host writes per plane at a time: a plane crosses its block's
    // end, and collects, in every window.
    let mut rng = Rng::stream(7, "test");
    let n = ftl.logical_units();
    ftl.instant = true;
    let mut runs = Vec::new();
    for _ in 0..8 {
        let before = ftl.stats.gc_runs;
        for _ in 0..(planes * step) {
            ftl.write(rng.below(n)).unwrap();
        }
        runs.push(ftl.stats.gc_runs - before);
    }
    assert!(runs.iter().all(|&r| r > 0), "GC runs per window {runs:?}");
    ftl.check().unwrap();
}
