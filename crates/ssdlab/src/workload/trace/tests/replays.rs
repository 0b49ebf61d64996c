//! A trace replay: devices laid side by side and wrapped, filters, windows and repeats, the
//! refusals (filters that select nothing, an event kind not in the file, a FIFO, a replay too
//! long for the clock), and what its result reports (out-of-order requests, the timestamps'
//! resolution, a leading outlier).

use super::*;

#[test]
fn a_replay_lays_devices_side_by_side_and_wraps() {
    use replay::{Fit, Layout, Replay, TraceJob};
    let job = |layout: Layout, fit: Fit| TraceJob {
        layout,
        fit,
        ..TraceJob::from_json(&format!(r#"{{"trace": {:?}}}"#, fixture("umass_spc.csv"))).unwrap()
    };
    let mut r = Replay::new(&job(Layout::Auto, Fit::Wrap), 1 << 30, 1).unwrap();
    assert_eq!(r.out.mapping.layout, "side-by-side");
    // ASU 0 ends at 2.5 MiB (3 MiB rounded), ASUs 1 and 2 within 1 MiB.
    assert_eq!(r.out.mapping.span_bytes, 5 << 20);
    assert!(!r.out.mapping.applied);
    let mut got = Vec::new();
    while let Some(q) = r.next_request().unwrap() {
        got.push((q.offset, q.len));
    }
    assert_eq!(
        got[2],
        ((3 << 20) + 1000 * 512, 8192),
        "ASU 1 starts at 3 MiB"
    );
    assert_eq!(
        got[5],
        ((4 << 20) + 7 * 512, 1024),
        "widened to whole sectors"
    );
    assert_eq!(r.out.unaligned, 1);
    // The same on a 2 MiB device: wrapped; scaled; refused.
    let mut r = Replay::new(&job(Layout::Auto, Fit::Wrap), 2 << 20, 1).unwrap();
    assert!(r.out.mapping.applied);
    while let Some(q) = r.next_request().unwrap() {
        assert!(q.offset + q.len <= 2 << 20);
    }
    assert!(r.out.mapping.moved > 0);
    let mut r = Replay::new(&job(Layout::Overlay, Fit::Scale), 2 << 20, 1).unwrap();
    while let Some(q) = r.next_request().unwrap() {
        assert!(q.offset + q.len <= 2 << 20);
    }
    let e = Replay::new(&job(Layout::Auto, Fit::None), 2 << 20, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("more than the device"), "{e}");
}

#[test]
fn a_replay_filters_devices_windows_and_repeats() {
    use replay::{Replay, TraceJob};
    let mut j = TraceJob::from_json(&format!(
        r#"{{"trace": {:?}, "devices": ["0"], "repeat": 2}}"#,
        fixture("umass_spc.csv")
    ))
    .unwrap();
    let mut r = Replay::new(&j, 1 << 30, 1).unwrap();
    assert_eq!((r.per_pass, r.out.filtered_device), (3, 4));
    let mut times = Vec::new();
    while let Some(q) = r.next_request().unwrap() {
        times.push(q.arrival.ps());
    }
    assert_eq!(times.len(), 6);
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    // Pass 2 starts one mean gap (15 ms) after pass 1's last arrival (30.001 ms).
    assert_eq!(times[3], 30_001_000_000 + 15_000_500_000);
    j.devices.clear();
    j.repeat = 1;
    j.start = Some(crate::config::Dur(crate::sim::SimTime(2_000_000_000)));
    j.stop = Some(crate::config::Dur(crate::sim::SimTime(25_000_000_000)));
    let r = Replay::new(&j, 1 << 30, 1).unwrap();
    assert_eq!((r.per_pass, r.out.filtered_window), (3, 3));
}

/// Filters that leave nothing are refused, naming the filter and what the trace holds (issue 15,
/// defect 11); before, each gave an all-zero replay.
#[test]
fn a_replay_whose_filters_select_nothing_is_refused() {
    use replay::{Replay, TraceJob};
    let job = |extra: &str, file: &str| {
        TraceJob::from_json(&format!(r#"{{"trace": {:?}{extra}}}"#, fixture(file))).unwrap()
    };
    let err = |j: &TraceJob| Replay::new(j, 1 << 30, 1).err().unwrap().to_string();
    let e = err(&job(r#", "devices": ["99"]"#, "umass_spc.csv"));
    assert!(e.contains("field `devices`") && e.contains("got 99"), "{e}");
    assert!(
        e.contains("expected one of the trace's device(s) 0, 1, 2"),
        "{e}"
    );
    let e = err(&job(r#", "start": "10s""#, "umass_spc.csv"));
    assert!(e.contains("field `start`") && e.contains("got 10 s"), "{e}");
    assert!(e.contains("span 0 s to 0.03"), "{e}");
    let e = err(&job(r#", "stop": "0s""#, "umass_spc.csv"));
    assert!(
        e.contains("field `stop`") && e.contains("first request (at 0 s)"),
        "{e}"
    );
    assert!(Replay::new(&job(r#", "devices": ["8:0"]"#, "blkparse.txt"), 1 << 30, 1).is_ok());
    let e = err(&job(r#", "devices": ["8:32"]"#, "blkparse.txt"));
    assert!(
        e.contains("got 8:32") && e.contains("device(s) 8:0, 8:16"),
        "{e}"
    );
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn a_blkparse_replay_of_an_event_kind_not_in_the_file_is_refused() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-q-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("d_only.txt");
    std::fs::write(
        &path,
        "  8,0    1        1     0.000000000  4162  D  WS 2048 + 8 [fio]\n  \
         8,0    1        2     0.000100000  4162  D   R 4096 + 16 [fio]\n",
    )
    .unwrap();
    let j = TraceJob::from_json(&format!(
        r#"{{"trace": {:?}, "blkparse_event": "Q"}}"#,
        path.to_string_lossy()
    ))
    .unwrap();
    let e = Replay::new(&j, 1 << 30, 1).err().unwrap().to_string();
    assert!(
        e.contains("field `blkparse_event`") && e.contains("got Q"),
        "{e}"
    );
    assert!(e.contains("holds 2 D events"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A replay's `out_of_order` is the count `trace stats` gives for the same file, in either mode
/// (issue 15, defect 11: afap replays said 0 where stats said 3).
#[test]
fn a_replay_counts_out_of_order_requests_as_trace_stats_does() {
    use replay::{Replay, ReplayMode, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-ooo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Times 10, 50, 20, 30, 60, 40 µs: 20, 30 and 40 come after 50 or 60.
    let times: Vec<u64> = [10, 50, 20, 30, 60, 40].iter().map(|t| t * 1000).collect();
    let p = disksim_trace(&dir, "ooo.trace", &times);
    let st = stats::of_source(
        &p,
        &ReadOptions::default(),
        &StatsOptions::default(),
        &[],
        1,
        &mut |_| true,
    )
    .unwrap();
    assert_eq!(st.stats.time.out_of_order, 3);
    for mode in [ReplayMode::Timed, ReplayMode::Afap] {
        let mut j = TraceJob::from_json(&format!(r#"{{"trace": {p:?}}}"#)).unwrap();
        j.mode = mode;
        let mut r = Replay::new(&j, 1 << 30, 1).unwrap();
        while r.next_request().unwrap().is_some() {}
        assert_eq!(r.out.out_of_order, 3, "{mode:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `trace stats` and a replay report the timestamps' resolution (issue 45, point 14): a trace
/// in whole seconds says 1 s, however many requests share a second, so a timed replay of it can
/// be told to be a burst per second.
#[test]
fn stats_and_a_replay_report_the_timestamp_resolution() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-res-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, Vec<u64>, Option<f64>); 4] = [
        // Seconds, in µs: 3 s, 3 s, 4 s, 6 s (out of order too): all whole seconds.
        (
            "s.trace",
            vec![3_000_000, 3_000_000, 6_000_000, 4_000_000],
            Some(1e6),
        ),
        ("ms.trace", vec![1_000, 3_500, 2_000], Some(500.0)),
        ("us.trace", vec![10, 11, 13], Some(1.0)),
        ("one.trace", vec![7, 7], None),
    ];
    for (name, times_us, want) in cases {
        let times: Vec<u64> = times_us.iter().map(|t| t * 1000).collect();
        let p = disksim_trace(&dir, name, &times);
        let st = stats::of_source(
            &p,
            &ReadOptions::default(),
            &StatsOptions::default(),
            &[],
            1,
            &mut |_| true,
        )
        .unwrap();
        assert_eq!(st.stats.time.resolution_us, want, "{name}");
        let j = TraceJob::from_json(&format!(r#"{{"trace": {p:?}}}"#)).unwrap();
        let r = Replay::new(&j, 1 << 30, 1).unwrap();
        assert_eq!(r.out.time_resolution_us, want, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A replay opens its trace once per pass: a FIFO is refused at once, never waited on (issue 15,
/// defect 9; before, the prescan blocked in open until a writer came, then the replay pass read
/// nothing).
#[cfg(unix)]
#[test]
fn a_replay_of_a_fifo_is_refused_without_blocking() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("t.fifo");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let j = TraceJob::from_json(&format!(r#"{{"trace": {:?}}}"#, fifo.to_string_lossy())).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tx.send(Replay::new(&j, 1 << 30, 1).err().map(|e| e.to_string()))
            .ok();
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a replay of a FIFO must not block");
    let e = got.expect("a FIFO is refused");
    assert!(
        e.contains("a pipe or FIFO") && e.contains("regular file"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A timed replay whose first request lies far before the rest says so in its result (issue 15,
/// defect 3): the device idles through the gap, which a line stamped 0 in front of later times
/// causes. Not for a trace without such a gap, nor for an as-fast-as-possible replay.
#[test]
fn a_leading_outlier_is_reported_by_a_timed_replay() {
    use replay::{Replay, ReplayMode, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-outlier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gap_of = |times_us: &[u64], mode: ReplayMode| {
        let times: Vec<u64> = times_us.iter().map(|t| t * 1000).collect();
        let p = disksim_trace(&dir, &format!("t{}.trace", times_us[1]), &times);
        let mut j = TraceJob::from_json(&format!(r#"{{"trace": {p:?}}}"#)).unwrap();
        j.mode = mode;
        let mut r = Replay::new(&j, 1 << 30, 1).unwrap();
        while r.next_request().unwrap().is_some() {}
        r.out.leading_gap_s
    };
    // 0, then three requests 10 s later, 1 µs apart.
    let outlier = [0, 10_000_000, 10_000_001, 10_000_002];
    let gap = gap_of(&outlier, ReplayMode::Timed).expect("an outlier is reported");
    assert!((gap - 10.0).abs() < 1e-9, "{gap}");
    assert_eq!(gap_of(&outlier, ReplayMode::Afap), None);
    assert_eq!(gap_of(&[0, 1, 2, 3], ReplayMode::Timed), None);
    // A long but even trace (one request a minute) has no outlier.
    assert_eq!(
        gap_of(
            &[0, 60_000_000, 120_000_000, 180_000_000],
            ReplayMode::Timed
        ),
        None
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A timed replay too long for the clock whose second request is stamped before its first (out
/// of order) is refused without calling the first an outlier: the gap between them is not
/// negative-wrapped into a huge one.
#[test]
fn an_out_of_order_second_request_is_not_taken_for_an_outlier() {
    use replay::{Replay, TraceJob};
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-ooo2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 100 s, then 50 s, then 200 s; at time_scale 1e6 the 150 s span overflows the clock.
    let times: Vec<u64> = [100u64, 50, 200]
        .iter()
        .map(|t| t * 1_000_000_000)
        .collect();
    let p = disksim_trace(&dir, "ooo.trace", &times);
    // The refusal of a timed replay of the trace at `time_scale`.
    let refusal = |time_scale: &str| {
        let j = TraceJob::from_json(&format!(
            r#"{{"trace": {p:?}, "time_scale": {time_scale}}}"#
        ))
        .unwrap();
        Replay::new(&j, 1 << 30, 1)
            .err()
            .expect("too long")
            .to_string()
    };
    let e = refusal("1e6");
    assert!(e.contains("more than the simulated clock holds"), "{e}");
    assert!(!e.contains("outlier"), "{e}");
    // A factor so large that the product is no longer a number: both said in a few digits
    // (was the factor's 301 digits and "at least inf s").
    let e = refusal("1e300");
    assert!(e.contains("at time_scale 1e300 needs more than"), "{e}");
    assert!(!e.contains("inf") && e.len() < 400, "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
