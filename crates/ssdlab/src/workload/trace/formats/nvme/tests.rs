use super::super::{self as formats, BlkEvent, Format, Parsed, State};
use super::*;

fn one(line: &str) -> LineResult<Parsed> {
    let mut st = State::default();
    formats::parse(Format::Nvme, &mut st, BlkEvent::D, line.as_bytes())
}

fn rec(line: &str) -> RawRecord {
    match one(line) {
        Ok(Parsed::Record(r)) => r,
        Ok(Parsed::Skip) => panic!("skipped: {line}"),
        Ok(Parsed::Blank) => panic!("blank: {line}"),
        Err(e) => panic!("{e}: {line}"),
    }
}

const W: &str = "             fio-2342    [003] ..... 81.135268: nvme_setup_cmd: nvme0: disk=nvme0n1, qid=4, cmdid=61, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_cmd_write slba=2048, len=7, ctrl=0x20, dsmgmt=196608, reftag=0)";

#[test]
fn a_write_with_a_data_placement_directive() {
    let r = rec(W);
    assert_eq!(r.op, TraceOp::Write);
    assert_eq!(r.time_ps, 81_135_268_000_000);
    assert_eq!(r.offset, 2048 * 512);
    assert_eq!(r.len, 8 * 512);
    assert_eq!(r.device, 1);
    // ctrl 0x20: DTYPE 2; dsmgmt 196608 = 3 << 16: DSPEC 3.
    assert_eq!(r.directive, Directive::Placement(3));
}

#[test]
fn lba_size_scales_the_addresses() {
    let mut st = State::default();
    st.set_nvme_lba_bytes(4096);
    let Ok(Parsed::Record(r)) = formats::parse(Format::Nvme, &mut st, BlkEvent::D, W.as_bytes())
    else {
        panic!()
    };
    assert_eq!((r.offset, r.len), (2048 * 4096, 8 * 4096));
}

#[test]
fn commands_become_requests_or_counted_skips() {
    let pre = "kworker/u16:2-77 [001] d..1. 5.000001: nvme_setup_cmd: nvme1: disk=nvme1n2, qid=2, cmdid=9, nsid=2, flags=0x0, meta=0x0, cmd=";
    let r = rec(&format!(
        "{pre}(nvme_cmd_read slba=10, len=0, ctrl=0x0, dsmgmt=0, reftag=0)"
    ));
    assert_eq!(
        (r.op, r.offset, r.len, r.device),
        (TraceOp::Read, 5120, 512, 1 << 20 | 2)
    );
    let r = rec(&format!("{pre}(nvme_cmd_flush cdw10=00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00)"));
    assert_eq!(r.op, TraceOp::Flush);
    // Write Zeroes: with Deallocate (ctrl bit 9) a trim, else a write.
    let r = rec(&format!(
        "{pre}(nvme_cmd_write_zeroes slba=0, len=15, ctrl=0x200, dsmgmt=0, reftag=0)"
    ));
    assert_eq!((r.op, r.len), (TraceOp::Trim, 8192));
    let r = rec(&format!(
        "{pre}(nvme_cmd_write_zeroes slba=0, len=15, ctrl=0x0, dsmgmt=0, reftag=0)"
    ));
    assert_eq!(r.op, TraceOp::Write);
    // Streams directive (DTYPE 1).
    let r = rec(&format!(
        "{pre}(nvme_cmd_write slba=0, len=0, ctrl=0x10, dsmgmt=131072, reftag=0)"
    ));
    assert_eq!(r.directive, Directive::Stream(2));
    // Zone Append, printed decoded and (older kernels) as bytes.
    let r = rec(&format!(
        "{pre}(nvme_cmd_zone_append slba=4096, len=7, ctrl=0x0, dsmgmt=0, reftag=0)"
    ));
    assert_eq!((r.op, r.offset, r.len), (TraceOp::Append, 4096 * 512, 4096));
    let r = rec(&format!("{pre}(nvme_cmd_zone_append cdw10=00 10 00 00 00 00 00 00 07 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00)"));
    assert_eq!((r.op, r.offset, r.len), (TraceOp::Append, 4096 * 512, 4096));
    // Zone Management Send, old and new text, and Select All.
    let r = rec(&format!(
        "{pre}(nvme_cmd_zone_mgmt_send slba=8192, zsa=4, all=0)"
    ));
    assert_eq!(
        (r.op, r.offset, r.all_zones),
        (TraceOp::ZoneReset, 8192 * 512, false)
    );
    let r = rec(&format!(
        "{pre}(nvme_cmd_zone_mgmt_send slba=0, zsa=2:finish zone, all=0)"
    ));
    assert_eq!(r.op, TraceOp::ZoneFinish);
    let r = rec(&format!(
        "{pre}(nvme_cmd_zone_mgmt_send slba=0, zsa=1:close zone, all=1)"
    ));
    assert_eq!((r.op, r.all_zones), (TraceOp::ZoneClose, true));
    let r = rec(&format!("{pre}(nvme_cmd_zone_mgmt_send cdw10=00 20 00 00 00 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 00 00 00 00)"));
    assert_eq!((r.op, r.offset), (TraceOp::ZoneOpen, 8192 * 512));
    for skip in [
        format!("{pre}(nvme_cmd_dsm nr=0, attributes=4)"),
        format!("{pre}(nvme_cmd_zone_mgmt_recv slba=0, numd=1023, zra=0, zrasf=0:list all zones, pr=1)"),
        format!("{pre}(nvme_cmd_zone_mgmt_send slba=0, zsa=16:set zone descriptor extension, all=0)"),
        format!("{pre}(nvme_cmd_verify cdw10=00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00)"),
        "nvme-1 [000] ..... 1.0: nvme_setup_cmd: nvme0: qid=0, cmdid=4, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_admin_identify cns=0, ctrlid=0)".into(),
        "fio-2342 [003] ..... 81.135300: nvme_complete_rq: nvme0: disk=nvme0n1, qid=4, cmdid=61, res=0x0, retries=0, flags=0x0, status=0x0".into(),
        "fio-2342 [003] ..... 81.135300: nvme_sq: nvme0: disk=nvme0n1, qid=4, head=12, tail=13".into(),
        "cpus=8".into(),
        "CPU 3 is empty".into(),
    ] {
        assert!(matches!(one(&skip), Ok(Parsed::Skip)), "{skip}");
    }
}

#[test]
fn a_long_line_of_separators_is_read_in_one_pass() {
    // 60 KiB of `1: ! `, with and without a CPU column: every pair looks like the end of
    // a timestamp, none is followed by an event name. The reader passes over the line
    // once (it used to rescan the prefix for the CPU column at each pair).
    for head in ["t-1 [000] ", "t-1 "] {
        let line = format!("{head}{}", "1: ! ".repeat(12_000));
        let t = std::time::Instant::now();
        assert!(one(&line).is_err());
        assert!(
            t.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
    }
}

#[test]
fn disk_names_are_device_numbers() {
    assert_eq!(device_by_name("nvme0n1"), Some(1));
    assert_eq!(device_by_name("nvme2n3"), Some(2 << 20 | 3));
    assert_eq!(device_by_name("nvme2c5n3"), Some(2 << 20 | 3));
    for bad in ["nvme", "nvme0", "nvmeXn1", "nvme0n", "nvme5000n1", "sda"] {
        assert_eq!(device_by_name(bad), None, "{bad}");
    }
}

#[test]
fn trace_cmd_report_lines_read_as_the_kernel_prints_them() {
    let r = rec("             fio-2342  [003] 81.135268123: nvme_setup_cmd:       nvme0: disk=nvme0n1, qid=4, cmdid=61, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_cmd_write slba=0, len=0, ctrl=0x0, dsmgmt=0, reftag=0)");
    assert_eq!(r.time_ps, 81_135_268_123_000);
    assert_eq!(r.directive, Directive::None);
}

#[test]
fn malformed_lines_name_their_field() {
    // (the line, the field the error names as data, a part of its message)
    let pre = "fio-1 [000] ..... 1.5: nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=1, nsid=1, flags=0x0, meta=0x0, cmd=";
    let cases = [
        (format!("{pre}(nvme_cmd_write slba=x, len=0, ctrl=0x0, dsmgmt=0, reftag=0)"), Some("slba"), "field `slba`: got \"x\", expected a starting LBA"),
        (format!("{pre}(nvme_cmd_write slba=0, len=70000, ctrl=0x0, dsmgmt=0, reftag=0)"), Some("len"), "got \"70000\""),
        (format!("{pre}(nvme_cmd_write slba=0, len=0, ctrl=0x30, dsmgmt=0, reftag=0)"), Some("ctrl"), "got 0x30 (DTYPE 3), expected a directive type"),
        (format!("{pre}(nvme_cmd_write slba=0, len=0, dsmgmt=0, reftag=0)"), Some("ctrl"), "field `ctrl`: missing, expected"),
        (format!("{pre}(nvme_cmd_zone_mgmt_send slba=0, zsa=9, all=0)"), Some("zsa"), "field `zsa`: got 9"),
        (format!("{pre}(nvme_cmd_read slba=18446744073709551615, len=0, ctrl=0x0, dsmgmt=0, reftag=0)"), Some("slba"), "end below 2^64"),
        (format!("{pre}(nvme_cmd_flush cdw10=00 00)"), Some("cdw10"), "field `cdw10`"),
        (format!("{pre}(nvme_cmd_write slba=0, len=0, ctrl=0x0, dsmgmt=0, reftag=0"), Some("cmd"), "field `cmd`"),
        ("fio-1 [000] ..... 1.5: nvme_setup_cmd: nvme0: disk=sda, qid=1, cmdid=1, nsid=1, flags=0x0, meta=0x0, cmd=(nvme_cmd_flush cdw10=)".into(), Some("disk"), "field `disk`: got \"sda\""),
        ("fio-1 [000] ..... 1.5: nvme_setup_cmd: qid=1".into(), None, "controller"),
        ("just some words".into(), None, "got \"just some words\", expected an ftrace line"),
        ("8,0 3 1 0.000000000 697 Q WS 1234 + 8 [fio]".into(), None, "ftrace line"),
    ];
    for (line, field, want) in cases {
        let e = match one(&line) {
            Err(e) => e,
            Ok(_) => panic!("accepted: {line}"),
        };
        assert_eq!(e.field, field, "{e}: {line}");
        assert!(e.to_string().contains(want), "{e} (wanted {want}): {line}");
    }
}
