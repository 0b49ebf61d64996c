use super::*;
use crate::config::SsdConfig;
use crate::request::RequestRecord;
use crate::workload::JobSpec;

fn setup(cfg_over: &[&str], job: &str) -> (Device, JobDriver) {
    let ov: Vec<String> = cfg_over.iter().map(|s| s.to_string()).collect();
    let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
    let spec = JobSpec::from_json(job).unwrap();
    let job = spec.fit(cfg.logical_bytes()).unwrap();
    let mut dev = Device::new(&cfg, 1).unwrap();
    dev.record_requests();
    let drv = JobDriver::new(job, &dev, 1).unwrap();
    (dev, drv)
}

/// Start `drv` on `dev`, run it until it has nothing left, and take the requests' records.
fn run_to_end(dev: &mut Device, drv: &mut JobDriver) -> Vec<RequestRecord> {
    drv.start(dev);
    assert!(dev.run(drv, u64::MAX, &mut |_, _| true).unwrap());
    dev.take_records().unwrap()
}

/// Wraps the job driver to look at the device at every completion.
struct Watch {
    inner: JobDriver,
    most_in_flight: usize,
    completions: u64,
}

impl Watch {
    fn new(inner: JobDriver) -> Watch {
        Watch {
            inner,
            most_in_flight: 0,
            completions: 0,
        }
    }
}

impl Driver for Watch {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.completions += 1;
        self.inner.on_complete(dev, now, done);
        self.most_in_flight = self.most_in_flight.max(dev.host().in_flight());
    }
    fn on_wake(&mut self, dev: &mut Device, now: SimTime, token: u32) {
        self.inner.on_wake(dev, now, token);
    }
}

#[test]
fn closed_loop_keeps_iodepth_requests_in_flight_per_instance() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":3,"numjobs":2,"io_count":200}"#,
    );
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 6);
    let mut w = Watch::new(drv);
    assert!(dev.run(&mut w, u64::MAX, &mut |_, _| true).unwrap());
    assert_eq!(
        w.most_in_flight, 6,
        "refilled to iodepth × numjobs, never more"
    );
    assert_eq!(w.completions, 200);
    assert_eq!(w.inner.finish().unwrap(), "io_count reached");
}

/// fio's `thinktime`: with one request in flight, each request is issued a think after
/// the previous one completed (fio's sync loop: I/O, think, I/O), and never earlier.
#[test]
fn thinktime_pauses_an_instance_after_each_completion() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":1,"io_count":50,"thinktime":"100us"}"#,
    );
    let mut recs = run_to_end(&mut dev, &mut drv);
    recs.sort_by_key(|r| r.issue_ps);
    assert_eq!(recs.len(), 50);
    for w in recs.windows(2) {
        let ready = w[0].issue_ps + w[0].latency_ps + 100_000_000;
        assert_eq!(
            w[1].issue_ps, ready,
            "issued exactly one think after the completion"
        );
    }
    // thinktime_blocks=4: a pause after every fourth completion only.
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":1,"io_count":40,"thinktime":"1ms","thinktime_blocks":4}"#,
    );
    let mut recs = run_to_end(&mut dev, &mut drv);
    recs.sort_by_key(|r| r.issue_ps);
    let gaps: Vec<u64> = recs
        .windows(2)
        .map(|w| w[1].issue_ps - (w[0].issue_ps + w[0].latency_ps))
        .collect();
    let pauses = gaps.iter().filter(|&&g| g == 1_000_000_000).count();
    assert_eq!(
        pauses, 9,
        "39 gaps, a pause after completions 4, 8, ..., 36: {gaps:?}"
    );
    assert!(
        gaps.iter().all(|&g| g == 0 || g == 1_000_000_000),
        "{gaps:?}"
    );
}

/// A runtime-bound job reports progress as a fraction of its runtime (issue 45, point 11:
/// it reported no total, and fio's `time_based`, whose count is a bound never reached, a
/// total of 2^62), closed and open loop.
#[test]
fn a_runtime_bound_job_reports_its_progress_by_simulated_time() {
    for job in [
        r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms"}"#,
        r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms","io_count":4611686018427387904}"#,
        r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms","rate_iops":20000}"#,
        // Arrivals faster than the device: the backlog drains long after the runtime.
        r#"{"rw":"randread","bs":"4KiB","iodepth":4,"runtime":"2ms","rate_iops":2000000}"#,
    ] {
        let (mut dev, mut drv) = setup(&[], job);
        drv.start(&mut dev);
        let mut reports = Vec::new();
        assert!(dev
            .run(&mut drv, 64, &mut |done, total| {
                reports.push((done, total));
                true
            })
            .unwrap());
        assert!(reports.len() > 10, "{job}: {} reports", reports.len());
        let completed = dev.host().completed();
        let fractions: Vec<f64> = reports
            .iter()
            .map(|&(done, total)| {
                assert!(total > 0 && total < 4 * completed, "{job}: {done}/{total}");
                assert!(done <= total, "{job}: {done}/{total}");
                done as f64 / total as f64
            })
            .collect();
        // The fraction rises with the simulated time and ends near 1.
        let last = *fractions.last().unwrap();
        assert!(
            fractions[0] < 0.5 && last > 0.8 && last <= 1.05,
            "{job}: {fractions:?}"
        );
    }
}

/// `instances = "clones"` (fio's `numjobs`): each instance issues exactly its own
/// `io_count`, whichever engine or loop runs it, where the default shares the total;
/// sequential clones each start at the region's start; without `io_count` each clone makes
/// one pass of the region, and `io_count` never extends past it (fio 3.33: `size=64k
/// bs=4k number_ios=40` gives each clone 16).
#[test]
fn clones_each_issue_their_own_count() {
    let per_queue = |dev: &mut Device| {
        let mut n = [0u64; 3];
        for r in dev.take_records().unwrap() {
            n[r.queue as usize] += 1;
        }
        n
    };
    for extra in [
        "",
        r#","ioengine":"psync""#,
        r#","iodepth_batch":2"#,
        r#","rate_iops":20000"#,
    ] {
        let job = format!(
            r#"{{"rw":"randread","bs":"4KiB","iodepth":4,"numjobs":3,"io_count":40,"size":"1MiB","instances":"clones"{extra}}}"#
        );
        let (mut dev, mut drv) = setup(&[], &job);
        drv.start(&mut dev);
        assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
        assert_eq!(drv.finish().unwrap(), "io_count reached");
        assert_eq!(per_queue(&mut dev), [40, 40, 40], "{job}");
    }
    // One pass of the region each (64 KiB of 4 KiB: 16), from the region's start.
    for io_count in ["", r#","io_count":40"#] {
        let job = format!(
            r#"{{"rw":"read","bs":"4KiB","iodepth":2,"numjobs":3,"size":"64KiB","offset":"1MiB","instances":"clones"{io_count}}}"#
        );
        let (mut dev, mut drv) = setup(&[], &job);
        let records = run_to_end(&mut dev, &mut drv);
        for q in 0..3 {
            let mut offsets: Vec<u64> = records
                .iter()
                .filter(|r| r.queue == q)
                .map(|r| r.offset)
                .collect();
            offsets.sort_unstable();
            let want: Vec<u64> = (0..16).map(|k| (1 << 20) + k * 4096).collect();
            assert_eq!(offsets, want, "{job}: queue {q}");
        }
    }
}

/// Open loop: each instance's arrivals are 1/rate apart, instances staggered over the first
/// gap; an arrival that finds iodepth requests in flight waits, and its latency counts from
/// its arrival.
#[test]
fn open_loop_arrivals_follow_the_rate_and_wait_in_a_backlog() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randwrite","bs":"4KiB","iodepth":1,"numjobs":2,"rate_iops":20000,"io_count":40}"#,
    );
    let mut issues: Vec<u64> = run_to_end(&mut dev, &mut drv)
        .iter()
        .map(|r| r.issue_ps)
        .collect();
    issues.sort_unstable();
    // 20,000 IOPS per instance: 50 µs apart; the second instance 25 µs after the first.
    let expected: Vec<u64> = (0..20u64)
        .flat_map(|k| [k * 50_000_000, k * 50_000_000 + 25_000_000])
        .collect();
    assert_eq!(issues, expected);
    // TLC programs take hundreds of µs: with iodepth 1, arrivals had to wait.
    let lat = dev.host().latency(crate::request::Op::Write);
    assert!(lat.summary().max > 500.0, "{:?}", lat.summary());
}

/// Runs `drv` to the end on `dev`, noting the device's requests in flight after each
/// completion the driver handled.
fn watch(dev: &mut Device, drv: JobDriver) -> (Watch, Vec<usize>) {
    struct Seq(Watch, Vec<usize>);
    impl Driver for Seq {
        fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
            self.0.on_complete(dev, now, done);
            self.1.push(dev.host().in_flight());
        }
    }
    let mut s = Seq(Watch::new(drv), Vec::new());
    assert!(dev.run(&mut s, u64::MAX, &mut |_, _| true).unwrap());
    (s.0, s.1)
}

/// Hand-worked: glibc runs one request of a descriptor at a time, so a posixaio job of
/// iodepth 256 on one file has 1 request at the device and 255 waiting behind it.
#[test]
fn posixaio_at_iodepth_256_keeps_one_request_at_the_device() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"read","bs":"4KiB","iodepth":256,"ioengine":"posixaio","io_count":400}"#,
    );
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 1);
    assert_eq!(drv.insts[0].backlog.len(), 255);
    let (w, seq) = watch(&mut dev, drv);
    assert_eq!(w.most_in_flight, 1);
    assert_eq!(w.completions, 400);
    assert!(seq.iter().all(|&n| n <= 1));
    // Latency counts from the submission, so the queue behind the running request shows.
    let lat = dev.host().latency(crate::request::Op::Read).summary();
    assert!(lat.mean > 100.0 * lat.min, "{lat:?}");
}

#[test]
fn psync_at_iodepth_32_keeps_one_in_flight_and_none_waiting() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":32,"ioengine":"psync","io_count":50}"#,
    );
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 1);
    assert!(drv.insts[0].backlog.is_empty());
    let (w, _) = watch(&mut dev, drv);
    assert_eq!((w.most_in_flight, w.completions), (1, 50));
    // libaio at the same depth keeps 32.
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":32,"ioengine":"libaio","io_count":50}"#,
    );
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 32);
}

/// iodepth 8, iodepth_low 3: the queue drains from 8 to 3 before it is filled again.
#[test]
fn iodepth_low_lets_the_queue_drain_before_refilling() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":8,"iodepth_low":3,"io_count":100}"#,
    );
    drv.start(&mut dev);
    let (_, seq) = watch(&mut dev, drv);
    assert_eq!(&seq[..12], &[7, 6, 5, 4, 8, 7, 6, 5, 4, 8, 7, 6]);
    // Without it, every completion is refilled at once.
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"randread","bs":"4KiB","iodepth":8,"io_count":100}"#,
    );
    drv.start(&mut dev);
    let (_, seq) = watch(&mut dev, drv);
    assert!(seq[..90].iter().all(|&n| n == 8), "{seq:?}");
}

/// Two adjacent 4 KiB writes handed to the kernel in one call become one 8 KiB request at
/// the device, and complete as two.
#[test]
fn a_batch_of_adjacent_writes_is_merged_into_one_request() {
    let (mut dev, mut drv) = setup(
        &[],
        r#"{"rw":"write","bs":"4KiB","iodepth":2,"iodepth_batch":2,"iodepth_low":1,"io_count":2}"#,
    );
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 1, "one merged request");
    let (w, _) = watch(&mut dev, drv);
    assert_eq!(w.completions, 2);
    let recs = dev.take_records().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0].offset, recs[1].offset), (0, 4096));
    assert_eq!(recs[0].latency_ps, recs[1].latency_ps);
    // With nomerges, two requests.
    let (mut dev, mut drv) = setup(
        &["host.nomerges=true"],
        r#"{"rw":"write","bs":"4KiB","iodepth":2,"iodepth_batch":2,"iodepth_low":1,"io_count":2}"#,
    );
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 2);
}

/// A system call of 10 µs before each psync request: with one request at a time on an
/// otherwise idle core, every latency grows by exactly 10 µs.
#[test]
fn a_syscall_cost_adds_to_each_synchronous_request() {
    let mean = |over: &[&str]| {
        let (mut dev, mut drv) = setup(
            over,
            r#"{"rw":"randread","bs":"4KiB","ioengine":"psync","io_count":40}"#,
        );
        drv.start(&mut dev);
        watch(&mut dev, drv);
        dev.host().latency(crate::request::Op::Read).summary().mean
    };
    let base = mean(&[]);
    let with = mean(&["host.syscall_cost=\"10us\""]);
    assert!((with - base - 10.0).abs() < 1e-6, "{base} {with}");
}

/// The kernel's layers above the driver, per request: 3 + 4 + 2 µs of file system, block
/// layer and scheduler add 9 µs to each psync request, and as instruction counts at 1 GHz
/// the same; with libaio batches of 4, each of the 4 requests pays them too.
#[test]
fn fs_block_and_scheduler_costs_add_to_each_request() {
    let mean = |over: &[&str], job: &str| {
        let (mut dev, mut drv) = setup(over, job);
        drv.start(&mut dev);
        watch(&mut dev, drv);
        (
            dev.host().latency(crate::request::Op::Read).summary().mean,
            dev.host_cpu().busy().map(|b| b.as_secs_f64()).sum::<f64>(),
        )
    };
    let psync = r#"{"rw":"randread","bs":"4KiB","ioengine":"psync","io_count":40}"#;
    let (base, _) = mean(&[], psync);
    let times = [
        "host.fs_cost=\"3us\"",
        "host.block_cost=\"4us\"",
        "host.sched_cost=\"2us\"",
    ];
    let (with, _) = mean(&times, psync);
    assert!((with - base - 9.0).abs() < 1e-6, "{base} {with}");
    let counts = [
        "host.clock=\"1GHz\"",
        "host.fs_instructions=3000",
        "host.block_instructions=4000",
        "host.sched_instructions=2000",
    ];
    let (with_counts, _) = mean(&counts, psync);
    assert!((with_counts - with).abs() < 1e-6, "{with} {with_counts}");
    let batched = r#"{"rw":"randread","bs":"4KiB","iodepth":4,"iodepth_batch":4,"io_count":40}"#;
    let (_, busy0) = mean(&[], batched);
    let (_, busy1) = mean(&times, batched);
    assert!(
        ((busy1 - busy0) - 40.0 * 9e-6).abs() < 1e-9,
        "{busy0} {busy1}"
    );
}

/// At max_sectors 1024 (512 KiB) below a 1 MiB MDTS, a 1 MiB read is two commands.
#[test]
fn max_sectors_below_mdts_splits_a_1mib_request_in_two() {
    let (mut dev, mut drv) = setup(
        &["interface.mdts=\"1MiB\"", "host.max_sectors=1024"],
        r#"{"rw":"read","bs":"1MiB","iodepth":1,"io_count":1}"#,
    );
    assert_eq!(dev.max_cmd_bytes(), 512 * 1024);
    drv.start(&mut dev);
    assert_eq!(dev.host().in_flight(), 1);
    let (w, _) = watch(&mut dev, drv);
    assert_eq!(w.completions, 1);
    let (dev2, _) = setup(&["interface.mdts=\"1MiB\""], r#"{"rw":"read","bs":"1MiB"}"#);
    assert_eq!(dev2.max_cmd_bytes(), 1 << 20);
}

#[test]
fn nvme_queues_too_small_for_the_job_are_refused_naming_iodepth() {
    let cfg = SsdConfig::resolve(
        "small-tlc",
        &[
            "interface.queue_depth=16".into(),
            "interface.io_queues=1".into(),
        ],
    )
    .unwrap();
    let spec =
        JobSpec::from_json(r#"{"rw":"randread","bs":"4KiB","iodepth":8,"numjobs":2}"#).unwrap();
    let job = spec.fit(cfg.logical_bytes()).unwrap();
    let dev = Device::new(&cfg, 1).unwrap();
    let e = JobDriver::new(job, &dev, 1).err().unwrap().to_string();
    assert!(e.contains("field `iodepth`"), "{e}");
    assert!(e.contains("need 16 queue entries"), "{e}");
    assert!(e.contains("holds at most 15"), "{e}");
}
fn setup_flows(cfg_over: &[&str], jobs: &[&str]) -> (Device, JobDriver) {
    let ov: Vec<String> = cfg_over.iter().map(|s| s.to_string()).collect();
    let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
    let jobs = jobs
        .iter()
        .map(|j| {
            JobSpec::from_json(j)
                .unwrap()
                .fit(cfg.logical_bytes())
                .unwrap()
        })
        .collect();
    let mut dev = Device::new(&cfg, 1).unwrap();
    // Filled as the preset says, so that reads reach the NAND.
    crate::run::precondition(&mut dev, &cfg, 1).unwrap();
    dev.record_requests();
    let drv = JobDriver::flows(jobs, &dev, 1).unwrap();
    (dev, drv)
}

fn run_all(dev: &mut Device, drv: &mut JobDriver) {
    drv.start(dev);
    assert!(dev.run(drv, u64::MAX, &mut |_, _| true).unwrap());
    drv.finish().unwrap();
}

/// The mean read latency of flow `f` (µs).
fn mean_read_us(drv: &JobDriver, f: usize) -> f64 {
    drv.outcomes()[f].lat[Op::Read.index()].summary().mean
}

const READER: &str =
    r#"{"name":"reader","rw":"randread","bs":"4KiB","iodepth":4,"runtime":"20ms"}"#;
const WRITER: &str =
    r#"{"name":"writer","rw":"randwrite","bs":"64KiB","iodepth":16,"runtime":"20ms"}"#;

/// Issue 41's check: a reader and a writer of one group run at once on the device, so the
/// reader's reads wait behind the writer's programs: its latency rises against the reader
/// alone (beside a flow of one read, so that both runs measure flows; seed 1: 94 µs alone,
/// 784 µs beside the writer).
#[test]
fn a_reader_beside_a_writer_is_slower_than_alone() {
    let (mut dev, mut drv) = setup_flows(
        &[],
        &[
            READER,
            r#"{"name":"idle","rw":"randread","bs":"4KiB","io_count":1}"#,
        ],
    );
    run_all(&mut dev, &mut drv);
    let alone = mean_read_us(&drv, 0);
    let (mut dev, mut drv) = setup_flows(&[], &[READER, WRITER]);
    run_all(&mut dev, &mut drv);
    let shared = mean_read_us(&drv, 0);
    let out = drv.outcomes();
    // Both ran for the runtime, at the same time.
    assert_eq!((out[0].start, out[1].start), (SimTime::ZERO, SimTime::ZERO));
    let writes = out[1].lat[Op::Write.index()].count;
    assert!(writes > 20, "the writer wrote {writes}");
    assert!(
        out[0].lat[Op::Write.index()].count == 0,
        "the reader only read"
    );
    assert!(
        shared > 2.0 * alone,
        "reader alone {alone:.1} µs, beside the writer {shared:.1} µs"
    );
    // The device's figures hold both flows' requests.
    let reads = dev.host().latency(Op::Read).count;
    assert_eq!(reads, out[0].lat[Op::Read.index()].count);
    assert_eq!(
        dev.host().latency(Op::Write).count,
        out[1].lat[Op::Write.index()].count
    );
}

/// Two flows alike draw different requests (the seed is mixed with the flow), and the same
/// flows and seed give the same requests, request for request.
#[test]
fn flows_are_deterministic_and_distinct() {
    let a = r#"{"name":"a","rw":"randread","bs":"4KiB","iodepth":2,"io_count":200}"#;
    let recs = || {
        let (mut dev, mut drv) = setup_flows(&[], &[a, a]);
        run_all(&mut dev, &mut drv);
        dev.take_records().unwrap()
    };
    let (r1, r2) = (recs(), recs());
    let key = |r: &crate::device::RequestRecord| (r.queue, r.offset, r.issue_ps, r.latency_ps);
    assert_eq!(
        r1.iter().map(key).collect::<Vec<_>>(),
        r2.iter().map(key).collect::<Vec<_>>()
    );
    let of = |q: u32| {
        r1.iter()
            .filter(|r| r.queue == q)
            .map(|r| r.offset)
            .collect::<Vec<_>>()
    };
    assert_eq!((of(0).len(), of(1).len()), (200, 200));
    assert_ne!(of(0), of(1));
    // Flow 0 of several sends what it sends alone.
    let (mut dev, mut drv) = setup(&[], a);
    run_all(&mut dev, &mut drv);
    let mut alone: Vec<u64> = dev
        .take_records()
        .unwrap()
        .iter()
        .map(|r| r.offset)
        .collect();
    let mut first = of(0);
    alone.sort_unstable();
    first.sort_unstable();
    assert_eq!(alone, first);
}

/// Groups run one after another: the second starts when the first's last request has
/// completed, on the same device; `startdelay` starts a flow later than its group, and its
/// runtime and ramp count from its own start.
#[test]
fn groups_follow_each_other_and_startdelay_delays_a_flow() {
    let (mut dev, mut drv) = setup_flows(
        &[],
        &[
            r#"{"name":"w","rw":"write","bs":"128KiB","iodepth":4,"io_count":64}"#,
            r#"{"name":"r","rw":"randread","bs":"4KiB","iodepth":1,"runtime":"2ms","ramp":"1ms","group":1}"#,
            r#"{"name":"late","rw":"randread","bs":"4KiB","iodepth":1,"runtime":"2ms","startdelay":"5ms","group":1}"#,
        ],
    );
    run_all(&mut dev, &mut drv);
    let recs = dev.take_records().unwrap();
    let out = drv.outcomes();
    let w_end = out[0].last_completion;
    assert!(w_end > SimTime::ZERO);
    assert_eq!(
        out[1].start, w_end,
        "group 1 starts at group 0's last completion"
    );
    assert_eq!(out[2].start, w_end + SimTime(5_000_000_000));
    assert_eq!(out[1].measure_from, w_end + SimTime(1_000_000_000));
    let issues = |q: u32| {
        recs.iter()
            .filter(move |r| r.queue == q)
            .map(|r| r.issue_ps)
    };
    assert!(issues(1).all(|t| t >= w_end.ps()));
    let late_first = issues(2).min().unwrap();
    assert_eq!(late_first, out[2].start.ps());
    // Each stops issuing at its own start plus its runtime.
    assert!(issues(2).all(|t| t < out[2].start.ps() + 2_000_000_000));
    assert!(issues(1).all(|t| t < out[1].start.ps() + 2_000_000_000));
    // Flow r's own figures leave out its ramp; the device's start from the first group.
    let r_reads = out[1].lat[Op::Read.index()].count;
    let r_after_ramp = recs
        .iter()
        .filter(|r| r.queue == 1 && r.issue_ps >= out[1].measure_from.ps())
        .count() as u64;
    assert_eq!(r_reads, r_after_ramp);
    assert!(r_after_ramp < issues(1).count() as u64);
    assert_eq!(drv.finish().unwrap(), "all flows finished");
}

/// A flow's error names the flow.
#[test]
fn an_error_of_one_flow_names_it() {
    let cfg = SsdConfig::resolve(
        "small-tlc",
        &[
            "interface.queue_depth=16".into(),
            "interface.io_queues=1".into(),
        ],
    )
    .unwrap();
    let jobs: Vec<Job> = [
        r#"{"name":"a","rw":"randread","bs":"4KiB","iodepth":8}"#,
        r#"{"name":"b","rw":"randread","bs":"4KiB","iodepth":8}"#,
    ]
    .iter()
    .map(|j| {
        JobSpec::from_json(j)
            .unwrap()
            .fit(cfg.logical_bytes())
            .unwrap()
    })
    .collect();
    let dev = Device::new(&cfg, 1).unwrap();
    let e = JobDriver::flows(jobs, &dev, 1).err().unwrap().to_string();
    assert!(e.contains("flows, field `iodepth`"), "{e}");
    assert!(e.contains("need 16 queue entries"), "{e}");
}

/// A drive that serves one read at a time (one die, one plane, one read time): a read's
/// latency grows with the depth in flight, about the depth × one read.
const SERIAL_READS: [&str; 6] = [
    "nand.channels=1",
    "nand.dies_per_package=1",
    "nand.planes_per_die=1",
    "nand.timing.read=[\"60us\", \"60us\", \"60us\"]",
    "precondition.random_overwrite=0.0",
    "host.cores=1",
];

/// The highest read latency (ps) at a fixed depth on `SERIAL_READS`.
fn worst_read_at(depth: u32) -> u64 {
    let job = format!(r#"{{"rw":"randread","bs":"4KiB","iodepth":{depth},"io_count":400}}"#);
    let (mut dev, mut drv) = setup_flows(&SERIAL_READS, &[&job]);
    run_all(&mut dev, &mut drv);
    let recs = dev.take_records().unwrap();
    recs.iter().map(|r| r.latency_ps).max().unwrap()
}

/// fio's latency_target: the search settles at the highest depth whose requests meet the
/// target (99.9 % of each 2 ms window's requests), never keeps more than that
/// in flight once found, restarts the figures for its final window, and stops the job.
#[test]
fn latency_target_settles_at_the_highest_depth_within_it() {
    // A target between depth 6's worst latency and depth 7's.
    let (six, seven) = (worst_read_at(6), worst_read_at(7));
    assert!(
        seven > six + 30_000_000,
        "latency grows with depth: {six} {seven}"
    );
    let target_ns = (six + seven) / 2 / 1000;
    let job = format!(
        r#"{{"rw":"randread","bs":"4KiB","iodepth":32,"runtime":"500ms","latency_target":"{target_ns}ns","latency_window":"2ms","latency_percentile":99.9}}"#
    );
    let (mut dev, drv) = setup_flows(&SERIAL_READS, &[&job]);
    let mut w = Watch::new(drv);
    w.inner.start(&mut dev);
    assert!(dev.run(&mut w, u64::MAX, &mut |_, _| true).unwrap());
    assert_eq!(w.inner.finish().unwrap(), "latency target's depth found");
    assert_eq!(w.inner.outcomes()[0].latency_depth, Some(6));
    // It went past 6 while searching (doubling to 8), and stopped long before 500 ms.
    assert!(w.most_in_flight >= 7, "{}", w.most_in_flight);
    assert!(dev.host().last_completion() < SimTime::from_us(100_000));
    // The figures are the final window's alone: after the restart, every request met the
    // target at depth 6 and at most 6 were in flight.
    let recs = dev.take_records().unwrap();
    assert!(!recs.is_empty() && (recs.len() as u64) < w.completions);
    assert!(recs.iter().all(|r| r.latency_ps <= target_ns * 1000));
    let mut edges: Vec<(u64, i32)> = recs
        .iter()
        .flat_map(|r| [(r.issue_ps, 1), (r.issue_ps + r.latency_ps, -1)])
        .collect();
    edges.sort_by_key(|&(t, d)| (t, d));
    let deepest = edges
        .iter()
        .scan(0i32, |depth, &(_, d)| {
            *depth += d;
            Some(*depth)
        })
        .max()
        .unwrap();
    assert_eq!(deepest, 6);
}

#[test]
fn latency_target_with_a_rate_or_a_missing_target_is_refused() {
    let (dev, _) = setup(&[], r#"{"rw":"randread","io_count":1}"#);
    let spec =
        JobSpec::from_json(r#"{"rw":"randread","rate_iops":1000,"latency_target":"1ms"}"#).unwrap();
    let job = spec.fit(dev.config().logical_bytes()).unwrap();
    let e = JobDriver::new(job, &dev, 1).err().unwrap().to_string();
    assert!(
        e.contains("field `latency_target`") && e.contains("rate_iops"),
        "{e}"
    );
    let e = JobSpec::from_json(r#"{"rw":"randread","latency_window":"1ms"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `latency_window`: given without latency_target"),
        "{e}"
    );
    let e =
        JobSpec::from_json(r#"{"rw":"randread","latency_target":"1ms","latency_percentile":0}"#)
            .unwrap_err()
            .to_string();
    assert!(e.contains("field `latency_percentile`: got 0"), "{e}");
}

/// With a percentile of 100, a request over the target at depth 1 ends the run with an
/// error naming the field (fio ends the job with ETIMEDOUT).
#[test]
fn latency_target_below_one_read_is_an_error() {
    let (mut dev, mut drv) = setup_flows(
        &SERIAL_READS,
        &[r#"{"rw":"randread","bs":"4KiB","iodepth":8,"io_count":100,"latency_target":"10us"}"#],
    );
    drv.start(&mut dev);
    assert!(dev.run(&mut drv, u64::MAX, &mut |_, _| true).unwrap());
    let e = drv.finish().unwrap_err().to_string();
    assert!(
        e.contains("field `latency_target`") && e.contains("queue depth 1"),
        "{e}"
    );
}

/// fio's rate_process=poisson: exponential gaps between an instance's arrivals, of mean
/// 1 / rate (their standard deviation equals their mean), the same for the same seed;
/// linear arrivals are evenly spaced.
#[test]
fn poisson_arrivals_have_exponential_gaps() {
    fn gaps(process: &str, seed: u64) -> Vec<f64> {
        let job = format!(
            r#"{{"rw":"randread","bs":"4KiB","iodepth":64,"io_count":20000,"rate_iops":20000{process}}}"#
        );
        let (mut dev, _) = setup(&[], &job);
        let spec = JobSpec::from_json(&job).unwrap();
        let job = spec.fit(dev.config().logical_bytes()).unwrap();
        let mut drv = JobDriver::new(job, &dev, seed).unwrap();
        let mut issued: Vec<u64> = run_to_end(&mut dev, &mut drv)
            .iter()
            .map(|r| r.issue_ps)
            .collect();
        issued.sort_unstable();
        issued.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    }
    let g = gaps(r#","rate_process":"poisson""#, 1);
    let n = g.len() as f64;
    let mean = g.iter().sum::<f64>() / n;
    let sd = (g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    assert!(
        (mean / 50e6 - 1.0).abs() < 0.03,
        "mean gap {mean} ps, want 50 µs"
    );
    assert!((sd / mean - 1.0).abs() < 0.05, "sd {sd} vs mean {mean}");
    // A share e^-1 of the gaps are longer than the mean, as an exponential's.
    let long = g.iter().filter(|&&x| x > mean).count() as f64 / n;
    assert!((long - (-1f64).exp()).abs() < 0.02, "{long}");
    assert_eq!(g, gaps(r#","rate_process":"poisson""#, 1));
    assert_ne!(g, gaps(r#","rate_process":"poisson""#, 2));
    let linear = gaps("", 1);
    assert!(linear.iter().all(|&x| x == 50e6), "evenly spaced");
}
