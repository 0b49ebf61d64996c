//! Saved drive states (docs/state.md): a run from a loaded state is the run from the
//! preconditioning that made it, a state saved after a run holds that run's drive, and a state
//! for another drive, truncated or damaged is refused with an error, never a panic.

mod common;

use proptest::prelude::*;
use ssdlab::device::Device;
use ssdlab::driver::jobs::JobDriver;
use ssdlab::run::precondition_to_state;
use ssdlab::{JobSpec, SsdConfig};
use std::path::{Path, PathBuf};

/// A directory of its own for each test (removed at the end of the test that made it).
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ssdlab-state-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cfg(preset: &str, set: &[&str]) -> SsdConfig {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    SsdConfig::resolve(preset, &set).unwrap()
}

fn with_state(c: &SsdConfig, path: &Path) -> SsdConfig {
    let mut c = c.clone();
    c.precondition.state = Some(path.display().to_string());
    c
}

/// The result as JSON without what names the run rather than the drive: wall time and the
/// config's hash (the config names the state file).
fn figures(c: &SsdConfig, job: &str, seed: u64) -> serde_json::Value {
    let spec = JobSpec::from_json(job).unwrap();
    let out = ssdlab::run(c, &spec, &common::opts(seed), &mut |_, _| true).unwrap();
    let mut v = common::without_wall(&out.result);
    v.as_object_mut().unwrap().remove("config_hash");
    v
}

const JOB: &str =
    r#"{"name":"mix","rw":"randrw","rwmixread":50,"bs":"4KiB","iodepth":16,"io_count":20000}"#;

/// The oracle: the same job and seed on the preconditioned drive and on the drive loaded
/// from the state that preconditioning saved give the same result, for each kind of
/// preconditioning and each FTL feature the state holds.
#[test]
fn a_run_from_a_saved_state_is_the_run_after_its_preconditioning() {
    let dir = Dir::new("roundtrip");
    let cases: &[(&str, &[&str])] = &[
        // Sequential fill and random overwrites: a map written entry by entry.
        ("small-tlc", &[]),
        // Steady state: the map in closed form, the dealing's permutation and places.
        (
            "small-tlc",
            &[
                "precondition.fill=\"steady-state\"",
                "precondition.random_overwrite=0.0",
            ],
        ),
        // Skewed steady state (80/20): two classes of units, each dealt over its places; then
        // skewed random overwrites on top.
        (
            "small-tlc",
            &[
                "precondition.fill=\"steady-state\"",
                "precondition.random_overwrite=0.1",
                "precondition.hot_fraction=0.2",
                "precondition.hot_write_fraction=0.8",
            ],
        ),
        // The demand-paged map: the translation pages and their places.
        (
            "small-tlc",
            &["ftl.mapping=\"cached\"", "ftl.mapping_cache=\"64KiB\""],
        ),
        // Write streams (hot-cold: the per-unit stamps), and wear-out with factory bad blocks.
        (
            "small-tlc",
            &["ftl.streams=2", "ftl.stream_policy=\"hot-cold\""],
        ),
        (
            "small-tlc",
            &[
                "reliability.factory_bad_block_rate=0.01",
                "reliability.pe_limit=3000",
            ],
        ),
    ];
    for (k, (preset, set)) in cases.iter().enumerate() {
        let c = cfg(preset, set);
        let path = dir.file(&format!("case{k}.state"));
        let saved = precondition_to_state(&c, 7, &path, &mut |_, _| true).unwrap();
        assert!(saved["bytes"].as_u64().unwrap() > 0, "{saved}");
        let fresh = figures(&c, JOB, 7);
        let loaded = figures(&with_state(&c, &path), JOB, 7);
        assert_eq!(fresh, loaded, "case {k}: {set:?}");
        // The run did something the state decides: GC ran, or reads found data.
        assert!(fresh["total"]["ios"].as_u64().unwrap_or(1) > 0);
    }
}

/// Saving the same drive twice writes the same bytes; and a state loaded and saved again
/// is the same file.
#[test]
fn a_state_file_is_deterministic() {
    let dir = Dir::new("determinism");
    let skewed: &[&str] = &[
        "precondition.fill=\"steady-state\"",
        "precondition.hot_fraction=0.1",
        "precondition.hot_write_fraction=0.9",
    ];
    for (k, set) in [&[][..], skewed].into_iter().enumerate() {
        let c = cfg("small-tlc", set);
        let (a, b, again) = (
            dir.file(&format!("a{k}")),
            dir.file(&format!("b{k}")),
            dir.file(&format!("again{k}")),
        );
        precondition_to_state(&c, 3, &a, &mut |_, _| true).unwrap();
        precondition_to_state(&c, 3, &b, &mut |_, _| true).unwrap();
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{set:?}"
        );
        // Loading then saving keeps every section (only the description names the source file).
        let reloaded = with_state(&c, &a);
        let mut dev = Device::new(&reloaded, 3).unwrap();
        ssdlab::run::precondition(&mut dev, &reloaded, 3).unwrap();
        dev.save_state(
            &reloaded,
            &again,
            &ssdlab::device::state::made_by_precondition(&c, 3),
        )
        .unwrap();
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&again).unwrap(),
            "{set:?}"
        );
    }
}

/// Run `job` on `dev` to its end with the data oracle off.
fn drive(dev: &mut Device, c: &SsdConfig, job: &str, seed: u64) {
    let spec = JobSpec::from_json(job).unwrap();
    let job = spec.fit(c.logical_bytes()).unwrap();
    let mut driver = JobDriver::new(job, dev, seed).unwrap();
    driver.start(dev);
    assert!(dev.run(&mut driver, 1 << 20, &mut |_, _| true).unwrap());
    driver.finish().unwrap();
}

/// What a live drive restarted from its state must keep: a state saved after a run holds the
/// map, the blocks' wear and the free space that run left, and the drive goes on from there
/// as the one that never stopped (the same places for the same later writes).
#[test]
fn a_state_saved_after_a_run_holds_the_drive_that_run_left() {
    let dir = Dir::new("restart");
    let c = cfg("small-tlc", &[]);
    let path = dir.file("after-run.state");
    let mut kept = Device::new(&c, 5).unwrap();
    ssdlab::run::precondition(&mut kept, &c, 5).unwrap();
    drive(&mut kept, &c, JOB, 5);
    kept.save_state(&c, &path, "after a run").unwrap();

    let loaded_cfg = with_state(&c, &path);
    let mut restarted = Device::new(&loaded_cfg, 5).unwrap();
    ssdlab::run::precondition(&mut restarted, &loaded_cfg, 5).unwrap();
    let same = |a: &Device, b: &Device| {
        let (fa, fb) = (
            a.backend().page_ftl().unwrap(),
            b.backend().page_ftl().unwrap(),
        );
        assert!((0..fa.logical_units()).all(|l| fa.lookup(l) == fb.lookup(l)));
        let wear = |d: &Device| -> Vec<(u32, u32, u32)> {
            d.backend()
                .page_ftl()
                .unwrap()
                .blocks()
                .iter()
                .map(|b| (b.valid, b.erase_count, b.write_ptr))
                .collect()
        };
        assert_eq!(wear(a), wear(b));
        fb.check().unwrap();
    };
    same(&kept, &restarted);
    // The next writes land in the same places on both, GC picking the same victims.
    let more = r#"{"name":"more","rw":"randwrite","bs":"4KiB","iodepth":1,"io_count":5000}"#;
    drive(&mut kept, &c, more, 6);
    drive(&mut restarted, &loaded_cfg, more, 6);
    same(&kept, &restarted);
}

/// A drive whose power-loss model is armed (`serve --power-cuts` with a state) keeps its map
/// checkpoints' pages in its map; saving the state at a clean stop lets them go (the state
/// holds the whole map), so the state loads into a fresh drive as any other, with the host's
/// map as the run left it.
#[test]
fn a_state_saved_with_the_power_loss_model_armed_loads() {
    let dir = Dir::new("power-loss");
    let c = cfg("small-tlc", &["ftl.checkpoint_units=64"]);
    let path = dir.file("armed.state");
    let mut kept = Device::new(&c, 5).unwrap();
    ssdlab::run::precondition(&mut kept, &c, 5).unwrap();
    kept.enable_power_loss("test").unwrap();
    drive(&mut kept, &c, JOB, 5);
    assert!(
        kept.backend()
            .page_ftl()
            .unwrap()
            .stats
            .checkpoint_units_written
            > 0
    );
    kept.flush_for_save().unwrap();
    kept.backend().page_ftl().unwrap().check().unwrap();
    kept.save_state(&c, &path, "armed").unwrap();
    let loaded_cfg = with_state(&c, &path);
    let mut restarted = Device::new(&loaded_cfg, 5).unwrap();
    ssdlab::run::precondition(&mut restarted, &loaded_cfg, 5).unwrap();
    let (fa, fb) = (
        kept.backend().page_ftl().unwrap(),
        restarted.backend().page_ftl().unwrap(),
    );
    assert!((0..fa.logical_units()).all(|l| fa.lookup(l) == fb.lookup(l)));
    fb.check().unwrap();
}

#[test]
fn a_state_for_another_drive_is_refused_naming_what_differs() {
    let dir = Dir::new("geometry");
    let c = cfg("small-tlc", &[]);
    let path = dir.file("small.state");
    precondition_to_state(&c, 1, &path, &mut |_, _| true).unwrap();
    let blocks: &[&str] = &["nand.blocks_per_plane=96"];
    let op: &[&str] = &["ftl.over_provisioning=0.2"];
    let cached: &[&str] = &["ftl.mapping=\"cached\"", "ftl.mapping_cache=\"1MiB\""];
    for (set, want) in [
        (
            blocks,
            "nand.blocks_per_plane: the state's 128, the config's 96",
        ),
        (op, "logical units (ftl.over_provisioning): the state's"),
        (cached, "back end: the state's page, the config's cached"),
    ] {
        let other = with_state(&cfg("small-tlc", set), &path);
        let e = Device::new(&other, 1)
            .and_then(|mut d| ssdlab::run::precondition(&mut d, &other, 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("made for another drive") && e.contains(want),
            "{set:?}: {e}"
        );
    }
    // GC and timing are not the state's: a state loads under other policies.
    let other = with_state(
        &cfg("small-tlc", &["ftl.gc.policy=\"cost-benefit\""]),
        &path,
    );
    let mut d = Device::new(&other, 1).unwrap();
    ssdlab::run::precondition(&mut d, &other, 1).unwrap();
}

#[test]
fn back_ends_without_a_saved_state_refuse_it() {
    let dir = Dir::new("backends");
    let path = dir.file("x.state");
    for (preset, set, want) in [
        ("seed003-mlc-bast", vec![], "the block-mapped back end"),
        ("pcm-optane-class", vec![], "the pcm back end"),
        ("zns-tlc", vec![], "the zoned back end"),
    ] {
        let c = cfg(preset, &set);
        let e = precondition_to_state(&c, 1, &path, &mut |_, _| true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not supported for") && e.contains(want),
            "{preset}: {e}"
        );
        let e = SsdConfig::resolve(preset, &["precondition.state=\"x.state\"".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("precondition.state") && e.contains(want),
            "{preset}: {e}"
        );
        assert!(!path.exists());
    }
    let e = SsdConfig::resolve("small-tlc", &["precondition.state=\"\"".to_string()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("got an empty path"), "{e}");
}

#[test]
fn a_missing_or_foreign_file_is_one_clear_error() {
    let dir = Dir::new("foreign");
    let c = cfg("small-tlc", &[]);
    let missing = with_state(&c, &dir.file("none"));
    let load = |c: &SsdConfig| {
        Device::new(c, 1)
            .and_then(|mut d| ssdlab::run::precondition(&mut d, c, 1))
            .unwrap_err()
            .to_string()
    };
    assert!(load(&missing).contains("cannot open it"));
    std::fs::write(dir.file("text"), "not a state").unwrap();
    let e = load(&with_state(&c, &dir.file("text")));
    assert!(e.contains("not a drive state's"), "{e}");
}

/// A small drive's state, made once for the corruption property.
fn small_state() -> (SsdConfig, Vec<u8>) {
    let dir = Dir::new("small");
    let c = cfg(
        "small-tlc",
        &[
            "nand.blocks_per_plane=64",
            "precondition.random_overwrite=0.3",
        ],
    );
    let path = dir.file("s");
    precondition_to_state(&c, 2, &path, &mut |_, _| true).unwrap();
    (c, std::fs::read(&path).unwrap())
}

/// A small drive's skewed steady state, for the crafted-file property.
fn skewed_state() -> (SsdConfig, Vec<u8>) {
    let dir = Dir::new("skewed");
    let c = cfg(
        "small-tlc",
        &[
            "nand.blocks_per_plane=64",
            "precondition.fill=\"steady-state\"",
            "precondition.random_overwrite=0",
            "precondition.hot_fraction=0.2",
            "precondition.hot_write_fraction=0.8",
        ],
    );
    let path = dir.file("s");
    precondition_to_state(&c, 2, &path, &mut |_, _| true).unwrap();
    (c, std::fs::read(&path).unwrap())
}

fn load_bytes(c: &SsdConfig, bytes: &[u8], name: &str) -> ssdlab::Result<()> {
    let dir = Dir::new(name);
    let path = dir.file("s");
    std::fs::write(&path, bytes).unwrap();
    let c = with_state(c, &path);
    let mut d = Device::new(&c, 2)?;
    ssdlab::run::precondition(&mut d, &c, 2).map(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A truncated file or one with a byte changed is refused (the checksum sees any change of
    /// up to 32 bits in a row), with an error naming the file, never a panic.
    #[test]
    fn a_damaged_state_is_refused(cut in any::<prop::sample::Index>(),
                                  at in any::<prop::sample::Index>(),
                                  flip in 1u8..=255, truncate in any::<bool>()) {
        let (c, mut bytes) = small_state();
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        } else {
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
        }
        let e = load_bytes(&c, &bytes, "damaged").unwrap_err().to_string();
        prop_assert!(e.contains("state file"), "{}", e);
    }

    /// A changed byte with the checksum made right again (a file crafted rather than damaged)
    /// loads or is refused, but never panics: every index is checked as it is read.
    #[test]
    fn a_crafted_state_never_panics(at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let (c, mut bytes) = small_state();
        let body = bytes.len() - 4;
        let i = at.index(body);
        bytes[i] ^= flip;
        let crc = crc32(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
        let _ = load_bytes(&c, &bytes, "crafted");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The same for a skewed steady state's layout (two classes of units): every count and
    /// place read from the file is checked.
    #[test]
    fn a_crafted_skewed_state_never_panics(at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let (c, mut bytes) = skewed_state();
        let body = bytes.len() - 4;
        let i = at.index(body);
        bytes[i] ^= flip;
        let crc = crc32(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
        let _ = load_bytes(&c, &bytes, "crafted-skewed");
    }
}

/// CRC-32 (IEEE), bit by bit: the oracle for the file's trailer.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
