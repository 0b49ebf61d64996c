use super::commands::allocation;
use super::errno_of;
use super::proto::*;
use super::*;
use crate::device::Status;

#[test]
fn model_faults_map_to_the_protocols_errors() {
    assert_eq!(errno_of(Status::Ok), 0);
    assert_eq!(errno_of(Status::Uncorrectable), EIO);
    assert_eq!(errno_of(Status::ReadOnly), EPERM);
    assert_eq!(errno_of(Status::WriteProtected), EPERM);
    assert_eq!(errno_of(Status::NoSpace), ENOSPC);
}

#[test]
fn a_zoned_drive_is_refused_in_one_line() {
    let zoned = SsdConfig::resolve("zns-tlc", &[]).unwrap();
    let e = check_servable(&zoned).unwrap_err().to_string();
    assert!(
        e.contains("zns-tlc is a zoned drive") && e.contains("NBD has no zones"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    assert!(check_servable(&SsdConfig::resolve("small-tlc", &[]).unwrap()).is_ok());
}

#[test]
fn a_raw_or_fusion_drive_is_refused_before_it_is_built() {
    let raw = [
        "ftl.kind=\"none\"",
        "ftl.over_provisioning=0.0",
        "precondition.fill=\"none\"",
        "precondition.random_overwrite=0.0",
    ]
    .map(String::from);
    let raw = SsdConfig::resolve("small-tlc", &raw).unwrap();
    for cfg in [raw, SsdConfig::resolve("seed002-fusion", &[]).unwrap()] {
        let e = check_servable(&cfg).unwrap_err().to_string();
        assert!(e.contains("has no logical blocks to export"), "{e}");
        assert!(!e.contains('\n'));
    }
}

/// The allocation runs against a byte-by-byte oracle: the state of each byte, run-length
/// encoded, cut at the cap.
#[test]
fn allocation_runs_match_a_byte_by_byte_oracle() {
    let unit = 4096u64;
    // Units 1, 2 and 5 mapped; data written in mapped unit 1 and in unmapped units 4 and 6
    // (as if still in the write cache).
    let mapped = |u: u64| matches!(u, 1 | 2 | 5);
    let written = [(5000u64, 1000u64), (20000, 512), (24576, 512)];
    let store_lba = 512u64;
    let allocated_block = |b: u64| {
        written
            .iter()
            .any(|&(o, l)| b * store_lba < o + l && o < (b + 1) * store_lba)
    };
    let extents = |o: u64, l: u64| {
        let mut v: Vec<(u64, u64, bool)> = Vec::new();
        for at in o..o + l {
            let a = allocated_block(at / store_lba);
            match v.last_mut() {
                Some(last) if last.2 == a => last.1 += 1,
                _ => v.push((at, 1, a)),
            }
        }
        v
    };
    let state = |at: u64| {
        if allocated_block(at / store_lba) {
            0
        } else if mapped(at / unit) {
            STATE_ZERO
        } else {
            STATE_ZERO | STATE_HOLE
        }
    };
    for (offset, len) in [(0u64, 32768u64), (512, 30000), (4096, 4096), (6000, 1)] {
        let mut oracle: Vec<(u32, u32)> = Vec::new();
        for at in offset..offset + len {
            let f = state(at);
            match oracle.last_mut() {
                Some(last) if last.1 == f => last.0 += 1,
                _ => oracle.push((1, f)),
            }
        }
        assert_eq!(
            allocation(offset, len, false, unit, mapped, extents),
            oracle,
            "{offset}+{len}"
        );
        assert_eq!(
            allocation(offset, len, true, unit, mapped, extents),
            oracle[..1]
        );
    }
}

/// The block-status reply of each back end the server carries: what its own map says (PCM is
/// updated in place: every byte holds data). Before the back end had a type, the reply read
/// the page FTL whatever the device held, and a block-mapped drive's written data was a hole.
#[test]
fn block_status_is_each_back_ends_own_map() {
    let plain = [
        "precondition.fill=\"none\"",
        "precondition.random_overwrite=0.0",
    ];
    let drives: [(&str, &[&str]); 4] = [
        ("small-tlc", &[]),
        (
            "small-tlc",
            &["ftl.mapping=\"cached\"", "ftl.mapping_cache=\"64KiB\""],
        ),
        (
            "small-tlc",
            &[
                "ftl.kind=\"bast\"",
                "ftl.map_unit=\"16KiB\"",
                "ftl.log_blocks=2",
            ],
        ),
        ("seed002-pcm", &[]),
    ];
    for (preset, sets) in drives {
        let sets: Vec<String> = plain.iter().chain(sets).map(|s| s.to_string()).collect();
        let cfg = SsdConfig::resolve(preset, &sets).unwrap();
        check_servable(&cfg).unwrap();
        let mut dev = Device::new(&cfg, 1).unwrap();
        let unit = cfg.map_unit_bytes();
        let w = Request {
            op: Op::Write,
            offset: 0,
            len: unit,
            queue: 0,
            flags: Flags::NONE,
            arrival: SimTime::ZERO,
        };
        dev.submit(SimTime::ZERO, w).unwrap();
        assert_eq!(dev.run_to_idle().unwrap()[0].2, Status::Ok);
        // No bytes in the data store: allocated units read as zeros.
        let reply = allocation(
            0,
            2 * unit,
            false,
            unit,
            |u| dev.is_mapped(u),
            |o, l| vec![(o, l, false)],
        );
        let kind = cfg.backend_kind();
        let expected = if kind == crate::config::BackendKind::Pcm {
            vec![(2 * unit as u32, STATE_ZERO)]
        } else {
            vec![
                (unit as u32, STATE_ZERO),
                (unit as u32, STATE_ZERO | STATE_HOLE),
            ]
        };
        assert_eq!(reply, expected, "{kind:?}");
    }
}
