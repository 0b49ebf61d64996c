use super::{map_unit_that_fits, unit_text};
use crate::config::SsdConfig;

fn err(overrides: &[&str]) -> String {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match SsdConfig::resolve("small-tlc", &ov) {
        Ok(_) => panic!("{overrides:?} accepted"),
        Err(e) => e.to_string(),
    }
}

/// PRD entries belong to bus-master IDE: other kinds, a boundary that is no power of two,
/// and a fixed buffer offset off the page or past the boundary are one line each.
#[test]
fn prd_entries_are_refused_where_they_mean_nothing() {
    let ide = [
        "interface.kind=\"ide\"",
        "interface.queue_depth=1",
        "interface.io_queues=1",
    ];
    let cases: [(&[&str], &str, &str); 4] = [
        (
            &["interface.ata.prd_boundary=\"64KiB\""],
            "interface.ata.prd_boundary",
            "got 65536 bytes with interface.kind = \"nvme\", expected it absent",
        ),
        (
            &[
                ide[0],
                ide[1],
                ide[2],
                "interface.ata.prd_boundary=\"48KiB\"",
            ],
            "interface.ata.prd_boundary",
            "got 49152 bytes, expected a power of two from 4KiB to 1GiB",
        ),
        (
            &[
                ide[0],
                ide[1],
                ide[2],
                "interface.ata.prd_boundary=\"64KiB\"",
                "interface.ata.prd_buffer=\"64KiB\"",
            ],
            "interface.ata.prd_buffer",
            "got 65536 bytes, expected a multiple of 4KiB below",
        ),
        (
            &[
                ide[0],
                ide[1],
                ide[2],
                "interface.ata.prd_boundary=\"64KiB\"",
                "interface.ata.prd_buffer=\"2KiB\"",
            ],
            "interface.ata.prd_buffer",
            "got 2048 bytes",
        ),
    ];
    for (ov, field, want) in cases {
        let e = err(ov);
        assert!(
            e.contains(&format!("field `{field}`")) && e.contains(want),
            "{ov:?}: {e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    let e = err(&[
        ide[0],
        ide[1],
        ide[2],
        "interface.ata.prd_buffer=\"sideways\"",
    ]);
    assert!(
        e.contains("expected \"random-page\", \"run-page\", \"aligned\" or a size"),
        "{e}"
    );
    let ok = [
        ide[0],
        ide[1],
        ide[2],
        "interface.ata.prd_boundary=\"64KiB\"",
        "interface.ata.prd_buffer=\"32KiB\"",
    ];
    SsdConfig::resolve("small-tlc", &ok.map(String::from)).unwrap();
    let run = [
        ide[0],
        ide[1],
        ide[2],
        "interface.ata.prd_boundary=\"64KiB\"",
        "interface.ata.prd_buffer=\"run-page\"",
    ];
    let cfg = SsdConfig::resolve("small-tlc", &run.map(String::from)).unwrap();
    assert_eq!(
        cfg.interface.ata.prd_buffer,
        crate::config::PrdBuffer::RunPage
    );
}

#[test]
fn steady_state_preconditioning_refuses_what_its_model_plane_cannot_stand_for() {
    let steady = "precondition.fill=\"steady-state\"";
    let page = "ftl.map_unit=\"16KiB\"";
    let e = match SsdConfig::resolve("pcm-micron-p8p", &[steady.to_string()]) {
        Ok(_) => panic!("steady state on PCM accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("field `precondition.fill`") && e.contains("PCM-only"),
        "{e}"
    );
    assert!(e.contains("expected \"sequential\" or \"none\""), "{e}");
    assert!(!e.contains('\n'), "{e}");
    SsdConfig::resolve("small-tlc", &[steady.to_string()]).unwrap();
    // The block-mapped FTLs reach theirs through their own write path (ftl/hybrid/steady.rs).
    for kind in ["block", "bast", "fast"] {
        let mut ov = vec![
            steady.to_string(),
            page.to_string(),
            format!("ftl.kind=\"{kind}\""),
        ];
        if kind != "block" {
            ov.push("ftl.log_blocks=4".into());
        }
        SsdConfig::resolve("small-tlc", &ov).unwrap();
        // With the wear model's retirement on the way (the checked writes).
        ov.push("reliability.pe_limit=3000".into());
        SsdConfig::resolve("small-tlc", &ov).unwrap();
    }
    // FDP and write streams overwrite the drive itself with their streams (ftl/steady.rs).
    SsdConfig::resolve("small-tlc", &[steady.to_string(), "fdp.handles=2".into()]).unwrap();
    SsdConfig::resolve("small-tlc", &[steady.to_string(), "ftl.streams=2".into()]).unwrap();
    // With the wear model's retirement on the way (the checked writes).
    for streams in ["fdp.handles=2", "ftl.streams=2"] {
        let ov = [steady, streams, "reliability.pe_limit=3000"].map(String::from);
        SsdConfig::resolve("small-tlc", &ov).unwrap();
    }
}

#[test]
fn block_mapped_ftls_refuse_what_they_cannot_model_in_one_line() {
    let page = "ftl.map_unit=\"16KiB\"";
    let cases: [(&[&str], &str); 6] = [
        (&["ftl.kind=\"bast\"", page], "field `ftl.log_blocks`: missing, expected at least 1"),
        (&["ftl.kind=\"fast\"", page, "ftl.log_blocks=1"], "field `ftl.log_blocks`: got 1, expected at least 2"),
        (&["ftl.kind=\"block\"", page, "ftl.log_blocks=2"], "field `ftl.log_blocks`: got 2, expected none"),
        (&["ftl.log_blocks=2"], "field `ftl.log_blocks`: got 2, expected none unless"),
        (&["ftl.kind=\"bast\"", "ftl.log_blocks=2"], "field `ftl.map_unit`: got 4096 bytes, expected the page size (16384)"),
        // small-tlc: 128 blocks per plane, 12.5 % hidden: 112 logical blocks per plane.
        (&["ftl.kind=\"bast\"", page, "ftl.log_blocks=16"], "field `ftl.over_provisioning`: got 0.125, which leaves too few spare blocks: each plane needs 129 blocks"),
    ];
    for (ov, want) in cases {
        let e = err(ov);
        assert!(e.contains(want), "{ov:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // 112 + 15 + 1 = 128 fits.
    let ov = ["ftl.kind=\"bast\"", page, "ftl.log_blocks=15"].map(String::from);
    SsdConfig::resolve("small-tlc", &ov).unwrap();
}

/// Write streams are a back end's capability: each back end without it says why, in one
/// line naming both parts.
#[test]
fn write_streams_are_refused_by_each_back_end_that_cannot_place_them() {
    let page = "ftl.map_unit=\"16KiB\"";
    let cases: [(&[&str], &str); 2] = [
        (
            &["ftl.streams=2", "ftl.kind=\"block\"", page],
            "no open block to choose",
        ),
        (
            &[
                "ftl.streams=2",
                "ftl.kind=\"none\"",
                "ftl.over_provisioning=0.0",
                "precondition.fill=\"none\"",
                "precondition.random_overwrite=0.0",
            ],
            "the host's FTL places every page itself",
        ),
    ];
    for (ov, why) in cases {
        let e = err(ov);
        assert!(
            e.contains("field `ftl.streams`: got 2 with ftl.kind") && e.contains(why),
            "{ov:?}: {e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    SsdConfig::resolve("small-tlc", &["ftl.streams=2".to_string()]).unwrap();
}

#[test]
fn an_endless_or_huge_config_file_is_refused_not_read_forever() {
    let e = SsdConfig::resolve("/dev/zero", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/dev/zero: more than 1048576 bytes, expected a TOML config"),
        "{e}"
    );
    let path = std::env::temp_dir().join(format!("ssdlab-bin-{}.toml", std::process::id()));
    std::fs::write(&path, b"\xff\xfe").unwrap();
    let e = SsdConfig::resolve(path.to_str().unwrap(), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not UTF-8 text (byte 0)"), "{e}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn dram_interface_banks_are_bounded_by_the_buffer_stripes() {
    let resolve = |banks: &str| {
        SsdConfig::resolve(
            "seed000-lpddr3-dramif",
            &[format!("interface.dram.banks={banks}")],
        )
    };
    // seed 000's buffer: 1 MiB in 4 KiB stripes, 256 of them.
    resolve("256").unwrap();
    for banks in ["257", "4294967295"] {
        let e = resolve(banks).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "field `interface.dram.banks`: got {banks}, expected 1 to 256"
            )),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}

/// A 30 TB QLC-sized drive (16 KiB pages, 4,096 planes of 1,024 blocks of 437 pages: 3.0e13
/// bytes) has 7.3e9 units of 4 KiB, past what 4-byte map entries address: refused, naming
/// the map unit that fits (8 KiB: 3.7e9 units), with which it is accepted. Only the config
/// is checked: nothing is allocated.
#[test]
fn a_drive_past_2_32_units_is_refused_naming_the_map_unit_that_fits() {
    let drive = |unit: &str| {
        let sets = [
            "nand.page_size=\"16KiB\"",
            "nand.channels=16",
            "nand.packages_per_channel=8",
            "nand.dies_per_package=8",
            "nand.planes_per_die=4",
            "nand.blocks_per_plane=1024",
            "nand.pages_per_block=437",
            &format!("ftl.map_unit=\"{unit}\""),
        ];
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        SsdConfig::resolve("small-tlc", &sets)
    };
    let e = drive("4KiB").unwrap_err().to_string();
    assert!(
        e.contains("field `nand`: 7331643392 mapping units")
            && e.contains("ftl.map_unit = \"8KiB\" makes it fit"),
        "{e}"
    );
    let cfg = drive("8KiB").unwrap();
    assert_eq!(cfg.physical_units(), 3_665_821_696);
    // Either side of the bound, at each unit; and no unit when a page is too many.
    let bound = u32::MAX as u64;
    assert_eq!(map_unit_that_fits(Some(bound - 1), 4096, 512), Some(4096));
    assert_eq!(map_unit_that_fits(Some(bound), 4096, 512), None);
    assert_eq!(
        map_unit_that_fits(Some((bound - 1) / 2), 8192, 2048),
        Some(4096)
    );
    assert_eq!(
        map_unit_that_fits(Some(bound / 2 + 1), 8192, 2048),
        Some(8192)
    );
    assert_eq!(map_unit_that_fits(Some(1000), 6144, 512), Some(1024));
    assert_eq!(map_unit_that_fits(None, 4096, 512), None);
    assert_eq!(
        (unit_text(8192), unit_text(1536)),
        ("8KiB".into(), "1536B".into())
    );
}

#[test]
fn a_geometry_past_what_is_addressed_is_refused_before_anything_is_sized() {
    // The values, and a product that wraps u64 to 0 (2^16 x 2^16 x 2^16 x 2^16):
    // both were multiplied unchecked (an abort allocating 1 TB, or an overflow).
    let huge = [
        &["nand.dies_per_package=30269", "nand.planes_per_die=280601"][..],
        &[
            "nand.channels=65536",
            "nand.packages_per_channel=65536",
            "nand.dies_per_package=65536",
            "nand.planes_per_die=65536",
        ][..],
    ];
    for ov in huge {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        let e = SsdConfig::resolve("small-tlc", &ov)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("field `nand`: ")
                && e.contains("mapping units")
                && e.contains("expected fewer than 2^32"),
            "{ov:?}: {e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}

/// A preconditioning skew: each fraction strictly between 0 and 1 (NaN and infinities too are
/// refused), both given, something to skew (random overwrites), a page-mapping FTL, and both
/// parts of the logical space non-empty. Each a line naming the field, the value and what was
/// expected.
#[test]
fn a_preconditioning_skew_out_of_range_or_meaningless_is_one_line() {
    let steady = "precondition.fill=\"steady-state\"";
    let hot = |v: &str| format!("precondition.hot_fraction={v}");
    let writes = |v: &str| format!("precondition.hot_write_fraction={v}");
    let resolve = |ov: &[String]| SsdConfig::resolve("small-tlc", ov);
    resolve(&[steady.into(), hot("0.2"), writes("0.8")]).unwrap();
    // small-tlc's own preconditioning: a fill and random overwrites, which the skew skews.
    resolve(&[hot("0.1"), writes("0.9")]).unwrap();
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (
            vec![hot("0"), writes("0.8")],
            "precondition.hot_fraction",
            "got 0,",
        ),
        (
            vec![hot("1"), writes("0.8")],
            "precondition.hot_fraction",
            "got 1,",
        ),
        (
            vec![hot("0.2"), writes("1.5")],
            "precondition.hot_write_fraction",
            "got 1.5,",
        ),
        (
            vec![hot("-0.2"), writes("0.8")],
            "precondition.hot_fraction",
            "got -0.2,",
        ),
        (
            vec![hot("nan"), writes("0.8")],
            "precondition.hot_fraction",
            "got NaN,",
        ),
        (
            vec![hot("0.2"), writes("inf")],
            "precondition.hot_write_fraction",
            "got inf,",
        ),
        (
            vec![hot("0.2")],
            "precondition.hot_write_fraction",
            "not set",
        ),
        (vec![writes("0.8")], "precondition.hot_fraction", "not set"),
        (
            vec![
                "precondition.fill=\"none\"".into(),
                "precondition.random_overwrite=0".into(),
                hot("0.2"),
                writes("0.8"),
            ],
            "precondition.hot_fraction",
            "nothing overwrites at random",
        ),
        (
            vec![
                "precondition.random_overwrite=0".into(),
                hot("0.2"),
                writes("0.8"),
            ],
            "precondition.hot_fraction",
            "nothing overwrites at random",
        ),
        (
            vec![hot("1e-12"), writes("0.8")],
            "precondition.hot_fraction",
            "leaves 0 of the drive's",
        ),
        (
            vec![
                "ftl.map_unit=\"16KiB\"".into(),
                "ftl.kind=\"block\"".into(),
                hot("0.2"),
                writes("0.8"),
            ],
            "precondition.hot_fraction",
            "page-mapping FTL",
        ),
    ];
    for (ov, field, what) in cases {
        let e = err(&ov.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            e.contains(&format!("field `{field}`")) && e.contains(what) && e.contains("expected"),
            "{ov:?}: {e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}
