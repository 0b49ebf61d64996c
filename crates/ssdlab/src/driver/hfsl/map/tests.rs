use super::nand::{COLD, HOT};
use super::*;
use proptest::prelude::*;

/// 2 channels × 2 chips, 6 blocks of 8 pages each, 2 KiB pages; `slots` PCM pages (and a
/// page for the map area of up to 256 logical pages).
fn hw(slots: u64) -> HardwareInfo {
    HardwareInfo {
        nand_channels: 2,
        nand_chips_per_channel: 2,
        nand_page_bytes: 2048,
        nand_pages_per_block: 8,
        nand_blocks: 24,
        nand_bytes: 24 * 8 * 2048,
        pcm_channels: 2,
        pcm_chips_per_channel: 8,
        pcm_bytes: (slots + 1) * 2048,
        pcm_line_bytes: 512,
        pcm_min_access_bytes: 2,
    }
}

fn cfg(method: FusionMethod, ssw: u64) -> HfslConfig {
    HfslConfig {
        fusion_method: method,
        ssw: crate::config::Bytes(ssw),
        ..HfslConfig::default()
    }
}

impl HfslMap {
    /// The map and the NAND bookkeeping agree.
    fn check_invariants(&self) {
        let ppb = self.pages_per_block;
        let per_die = self.valid.len() as u32 / self.dies.len() as u32;
        for (b, &flag) in self.free_block.iter().enumerate() {
            let b = b as u32;
            let d = b / per_die;
            let free = self.dies[d as usize].free.contains(&b) || self.erased.contains(&(d, b));
            assert_eq!(flag, free, "block {b}'s free flag");
        }
        for (b, &v) in self.valid.iter().enumerate() {
            let mapped = (b as u32 * ppb..(b as u32 + 1) * ppb)
                .filter(|&p| self.p2l[p as usize] != 0)
                .count() as u32;
            assert_eq!(v, mapped, "block {b}");
        }
        for (lpn, e) in self.entries.iter().enumerate() {
            match e.loc {
                Loc::Nand => assert_eq!(self.p2l[e.addr as usize], lpn as u32 + 1),
                Loc::Pcm => {
                    let pool = if e.cache { &self.cache } else { &self.same };
                    assert!(pool.order.contains(&pool.key(e, lpn as u32)));
                    assert!(e.state != 0);
                }
                Loc::Unmapped => {}
            }
        }
    }
}

#[test]
fn the_cache_pool_is_lru_a_read_hit_keeps_a_page_in_pcm() {
    // Two PCM slots, all cache: A and B written, A read, C written: B leaves, not A.
    let mut m = HfslMap::new(&cfg(FusionMethod::Cache, 512), &hw(2), 8).unwrap();
    m.write(0, 2048, false, 1).unwrap();
    m.write(2048, 2048, false, 2).unwrap();
    m.read(0, 512).unwrap();
    m.write(4096, 2048, false, 3).unwrap();
    assert_eq!(m.entry(0).loc, Loc::Pcm);
    assert_eq!(m.entry(1).loc, Loc::Nand);
    m.check_invariants();
}

#[test]
fn the_bloom_filter_holds_what_it_recorded_until_its_window_ends() {
    let mut b = Bloom::new(1 << 12, 2, 100);
    for lpn in 0..100 {
        assert!(!b.contains(1000 + lpn) || lpn > 0, "empty filter");
        b.record(lpn);
    }
    assert!((0..100).all(|lpn| b.contains(lpn)));
    // 100 pages × 2 bits in 4,096: a false positive now and then, not often.
    let false_hot = (10_000..20_000).filter(|&l| b.contains(l)).count();
    assert!(false_hot < 300, "{false_hot}");
    // The 101st record clears the filter first: only it is hot then.
    b.record(500);
    assert!(b.contains(500));
    assert!((0..100).filter(|&l| b.contains(l)).count() < 5);
}

#[test]
fn cold_data_opens_the_most_worn_free_block_and_hot_data_the_least_worn() {
    let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(4), 8).unwrap();
    // Die 0 holds blocks 0-5; block 0 is open, 1-5 free.
    for (b, n) in [(1, 7), (2, 3), (3, 9), (4, 1), (5, 5)] {
        m.erase_counts[b] = n;
    }
    m.open_next(0, COLD).unwrap();
    assert_eq!(m.dies[0].open[COLD], 3);
    m.open_next(0, HOT).unwrap();
    assert_eq!(m.dies[0].open[HOT], 4);
    let mut off = HfslMap::new(
        &HfslConfig {
            wear_aware: false,
            ..cfg(FusionMethod::SameLevel, 512)
        },
        &hw(4),
        8,
    )
    .unwrap();
    off.erase_counts[3] = 9;
    off.open_next(0, COLD).unwrap();
    assert_eq!(off.dies[0].open[COLD], 1, "in order when off");
}

#[test]
fn small_writes_go_to_pcm_and_a_small_write_to_a_nand_page_is_an_update() {
    let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 1024), &hw(8), 40).unwrap();
    // 512 B < SSW into an unmapped page: PCM, nothing read.
    let p = m.write(0, 512, false, 1).unwrap();
    assert_eq!(p.reads, vec![]);
    assert_eq!(p.writes, vec![RawOp::PcmWrite { addr: 0, len: 512 }]);
    assert_eq!(m.entry(0).loc, Loc::Pcm);
    assert_eq!(m.entry(0).state, 0b0001);
    // A page-sized write: NAND, on the first die of the stripe.
    let p = m.write(2048, 2048, false, 2).unwrap();
    assert_eq!(p.writes, vec![RawOp::NandProgram { page: 0 }]);
    // The next page goes to the other channel (die 2 of chips-per-channel 2: block 12).
    let p = m.write(4096, 2048, false, 3).unwrap();
    assert_eq!(p.writes, vec![RawOp::NandProgram { page: 12 * 8 }]);
    // A small write to LPN 1, in NAND: read, merge, the whole page to PCM (slot 1).
    let p = m.write(2048 + 1024, 512, false, 4).unwrap();
    assert_eq!(p.reads, vec![RawOp::NandRead { page: 0 }]);
    assert_eq!(
        p.writes,
        vec![RawOp::PcmWrite {
            addr: 2048,
            len: 2048
        }]
    );
    assert_eq!(m.counters.nand_updates, 1);
    assert_eq!(m.entry(1).state, 0b1111);
    assert_eq!(m.entry(1).counter, 2);
    // Its entry goes to the map area after the data (8 PCM slots: the area from 16 KiB).
    assert_eq!(
        m.plan().map,
        vec![RawOp::PcmWrite {
            addr: 16384 + 8,
            len: 8
        }]
    );
    assert!(!m.entry(1).changed);
    // A metadata write is small whatever its size.
    m.write(6 * 2048, 2048, true, 5).unwrap();
    assert_eq!(m.entry(6).loc, Loc::Pcm);
    assert_eq!(m.where_data_lives(), (3, 1));
    m.check_invariants();
}

#[test]
fn a_full_pcm_moves_its_coldest_page_to_nand() {
    let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 2048), &hw(2), 40).unwrap();
    m.write(0, 512, false, 1).unwrap();
    m.write(0, 512, false, 2).unwrap(); // LPN 0 is hotter
    m.write(2048, 512, false, 3).unwrap();
    let p = m.write(4096, 512, false, 4).unwrap();
    // LPN 1 (written once) leaves: its sub-page read from PCM, programmed to NAND.
    assert_eq!(
        p.reads,
        vec![RawOp::PcmRead {
            addr: 2048,
            len: 512
        }]
    );
    // LPN 1's program and its entry first; LPN 2's data goes into the freed slot only
    // then, and its entry after it (two slots: the map area from 4 KiB).
    let entry = |lpn: u64| RawOp::PcmWrite {
        addr: 4096 + lpn * 8,
        len: 8,
    };
    assert!(matches!(p.writes[..], [RawOp::NandProgram { .. }]));
    assert_eq!(p.map, vec![entry(1)]);
    assert_eq!(
        p.late_writes,
        vec![RawOp::PcmWrite {
            addr: 2048,
            len: 512
        }]
    );
    assert_eq!(p.late_map, vec![entry(2)]);
    assert_eq!(m.entry(1).loc, Loc::Nand);
    assert_eq!(m.entry(0).loc, Loc::Pcm);
    assert_eq!(m.counters.evictions, 1);
    // With the map in DRAM nothing waits: one phase of writes, no entry written.
    let dram = HfslConfig {
        map_store: MapStore::Dram,
        ..cfg(FusionMethod::SameLevel, 2048)
    };
    let mut m = HfslMap::new(&dram, &hw(2), 40).unwrap();
    for (off, v) in [(0, 1), (0, 2), (2048, 3)] {
        m.write(off, 512, false, v).unwrap();
    }
    let p = m.write(4096, 512, false, 4).unwrap();
    assert_eq!(p.writes.len(), 2);
    assert!(p.map.is_empty() && p.late_writes.is_empty() && p.late_map.is_empty());
    assert!(m.entry(2).changed);
    // A halt writes every changed entry: LPNs 0, 1 and 2 in one run.
    assert_eq!(
        m.halt().map,
        vec![RawOp::PcmWrite {
            addr: 4096,
            len: 24
        }]
    );
    assert!(!m.entry(2).changed);
}

#[test]
fn bad_requests_and_settings_are_errors() {
    let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(8), 40).unwrap();
    assert!(m.write(40 * 2048, 512, false, 1).is_err());
    assert!(m.read(0, 0).is_err());
    assert!(m.read(u64::MAX, 2).is_err());
    let e = HfslMap::new(&cfg(FusionMethod::SameLevel, 4096), &hw(8), 40)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("hfsl.ssw") && e.contains("4096"), "{e}");
    let e = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(8), 1000)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("logical pages"), "{e}");
}

#[test]
fn gc_makes_room_and_without_it_the_nand_runs_out() {
    // 40 pages rewritten 10 times: 400 programs on 192 physical pages.
    let mut m = HfslMap::new(&cfg(FusionMethod::SameLevel, 512), &hw(2), 40).unwrap();
    m.track_versions();
    for round in 0..10u32 {
        for lpn in 0..40u64 {
            m.write(lpn * 2048, 2048, false, round * 40 + lpn as u32 + 1)
                .unwrap();
        }
    }
    assert!(m.counters.gc_runs > 0 && m.counters.nand_erases == m.counters.gc_runs);
    m.check_invariants();
    for lpn in 0..40u32 {
        assert_eq!(m.versions_of(lpn), vec![9 * 40 + lpn + 1; 4]);
    }
    let off = HfslConfig {
        gc: false,
        ..cfg(FusionMethod::SameLevel, 512)
    };
    let mut m = HfslMap::new(&off, &hw(2), 40).unwrap();
    let e = (0..400u64)
        .find_map(|i| m.write((i % 40) * 2048, 2048, false, 1).err())
        .expect("runs out");
    // The setting to change is data: `hfsl`'s field `gc`, false, expected true.
    let i = e.invalid().expect("the field as data");
    assert_eq!(
        (i.origin.as_str(), i.field.as_deref(), i.value.as_deref()),
        ("hfsl", Some("gc"), Some("false"))
    );
    assert!(i.expected.as_deref().unwrap().starts_with("true"), "{i:?}");
    let e = e.to_string();
    assert!(
        e.contains("have written all their 24 NAND blocks") && e.contains("hfsl.gc off"),
        "{e}"
    );
}

#[derive(Clone, Debug)]
enum Io {
    Write {
        sector: u64,
        sectors: u64,
        meta: bool,
    },
    Read {
        sector: u64,
        sectors: u64,
    },
}

fn io(pages: u64) -> impl Strategy<Value = Io> {
    let sectors = pages * 4;
    prop_oneof![
        (0..sectors, 1u64..12, any::<bool>()).prop_map(move |(s, n, meta)| Io::Write {
            sector: s,
            sectors: n.min(sectors - s),
            meta: meta && n < 4,
        }),
        (0..sectors, 1u64..12).prop_map(move |(s, n)| Io::Read {
            sector: s,
            sectors: n.min(sectors - s),
        }),
    ]
}

fn method() -> impl Strategy<Value = (FusionMethod, f64)> {
    prop_oneof![
        Just((FusionMethod::SameLevel, 0.5)),
        Just((FusionMethod::Cache, 0.5)),
        Just((FusionMethod::Both, 0.5)),
        Just((FusionMethod::Both, 0.25)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// After a cut the persisted map and the firmware's block states are whatever they
    /// are: a restart never panics on them, and what it rebuilds is consistent.
    #[test]
    fn a_restart_rebuilds_a_consistent_map_from_any_persisted_state(
        entries in proptest::collection::vec((0u8..3, 0u32..400, any::<u8>(), any::<u32>()), 40),
        next_page in proptest::collection::vec(0u32..9, 24),
    ) {
        let c = cfg(FusionMethod::Both, 1024);
        let persisted: Vec<Persisted> = entries
            .iter()
            .map(|&(loc, addr, state, counter)| Persisted {
                loc: [Loc::Unmapped, Loc::Nand, Loc::Pcm][loc as usize],
                addr,
                state,
                counter,
            })
            .collect();
        let np: Vec<u32> = next_page.iter().map(|&p| p.min(8)).collect();
        let hw = hw(4);
        let slots = 4 * 4;
        let pages = 24 * 8 * 4;
        match HfslMap::recover(&c, &hw, &persisted, &np, &[0; 24], vec![0; slots], vec![0; pages], HfslCounters::default()) {
            Ok((mut m, found)) => {
                m.check_invariants();
                prop_assert_eq!(found.mapped + found.dropped, persisted.iter().filter(|p| p.loc != Loc::Unmapped).count() as u64);
                // And it takes requests.
                m.track_versions();
                for lpn in 0..40u64 {
                    m.write(lpn * 2048, 512, false, 1).unwrap();
                }
                m.check_invariants();
            }
            Err(e) => prop_assert!(e.to_string().contains("hfsl recovery"), "{}", e),
        }
    }

    /// Under random writes (small, large, metadata), reads, evictions and GC, every
    /// sub-page reads back the version last written to it.
    #[test]
    fn the_map_matches_a_plain_oracle(
        (m_kind, ratio) in method(),
        ssw in prop_oneof![Just(512u64), Just(1024), Just(2048)],
        slots in 2u64..6,
        wear_aware in any::<bool>(),
        ios in proptest::collection::vec(io(40), 1..400),
    ) {
        let c = HfslConfig { cache_ratio: ratio, wear_aware, ..cfg(m_kind, ssw) };
        let mut m = HfslMap::new(&c, &hw(slots), 40).unwrap();
        m.track_versions();
        let mut oracle = vec![[0u32; 4]; 40];
        for (v, io) in ios.iter().enumerate() {
            let v = v as u32 + 1;
            match *io {
                Io::Write { sector, sectors, meta } => {
                    m.write(sector * 512, sectors * 512, meta, v).unwrap();
                    for s in sector..sector + sectors {
                        oracle[(s / 4) as usize][(s % 4) as usize] = v;
                    }
                }
                Io::Read { sector, sectors } => {
                    let p = m.read(sector * 512, sectors * 512).unwrap();
                    prop_assert!(p.writes.is_empty() && p.erases.is_empty());
                }
            }
            m.check_invariants();
            for (lpn, want) in oracle.iter().enumerate() {
                prop_assert_eq!(&m.versions_of(lpn as u32)[..], &want[..], "lpn {}", lpn);
            }
        }
    }
}
