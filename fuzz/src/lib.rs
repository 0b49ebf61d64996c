//! Shared body of the fuzz targets: read every record of the input with one reader (both with
//! and without skipping bad lines) and feed what it reads to the statistics. Any panic is a bug.

use ssdlab::workload::trace::stats::{StatsOptions, TraceStats};
use ssdlab::workload::trace::{Format, ReadOptions, TraceReader};
use std::io::Cursor;

pub fn read_all(data: &[u8], format: Option<Format>) {
    read_with(data, format, None)
}

/// [`read_all`] with NVMe logical blocks of `lba_bytes`.
pub fn read_all_lba(data: &[u8], format: Option<Format>, lba_bytes: u64) {
    read_with(data, format, Some(lba_bytes))
}

fn read_with(data: &[u8], format: Option<Format>, lba_bytes: Option<u64>) {
    for skip_bad_lines in [false, true] {
        let opts = ReadOptions {
            format,
            skip_bad_lines,
            lba_bytes,
            ..Default::default()
        };
        let Ok(mut r) =
            TraceReader::from_reader("fuzz", Box::new(Cursor::new(data.to_vec())), &opts)
        else {
            continue;
        };
        let mut stats = TraceStats::new(StatsOptions {
            max_chunks: 64,
            ..Default::default()
        });
        // Bounded: a fuzz input is small, but a compressed one can expand a lot.
        for _ in 0..100_000 {
            match r.next_record() {
                Ok(Some(rec)) => stats.add(&rec),
                Ok(None) | Err(_) => break,
            }
        }
        let _ = stats.summary();
    }
}

/// The register-level NVMe controller under arbitrary host behaviour: the input is a sequence
/// of MMIO writes and reads, PCI config writes, host memory writes and raw 64-byte SQ entries
/// with doorbells, applied to a controller a driver has brought up. Any panic is a bug.
pub fn nvme_mmio(data: &[u8]) {
    use ssdlab::config::InterruptMode;
    use ssdlab::driver::nvme_regs::host_driver::{HostDriver, ASQ_ADDR, IOSQ_ADDR};
    use ssdlab::driver::nvme_regs::{reg, Controller, NvmeOptions};
    use std::sync::OnceLock;

    static CFG: OnceLock<ssdlab::SsdConfig> = OnceLock::new();
    let cfg = CFG.get_or_init(|| ssdlab::SsdConfig::resolve("small-tlc", &[]).expect("preset"));
    let Ok(ctrl) = Controller::new(cfg, &NvmeOptions::default()) else {
        return;
    };
    let Ok(mut d) = HostDriver::bring_up(ctrl, 16, InterruptMode::Pin) else {
        return;
    };
    let mut rest = data;
    let take = |rest: &mut &[u8], n: usize| -> Option<Vec<u8>> {
        if rest.len() < n {
            return None;
        }
        let (a, b) = rest.split_at(n);
        *rest = b;
        Some(a.to_vec())
    };
    let u64_of = |b: &[u8]| b.iter().rev().fold(0u64, |v, &x| (v << 8) | x as u64);
    for _ in 0..256 {
        let Some(op) = take(&mut rest, 1) else { break };
        match op[0] % 6 {
            0 => {
                let Some(b) = take(&mut rest, 11) else { break };
                let off = u64_of(&b[0..2]) % 0x4100;
                d.ctrl.mmio_write(off, b[2], u64_of(&b[3..11]));
            }
            1 => {
                let Some(b) = take(&mut rest, 3) else { break };
                let _ = d.ctrl.mmio_read(u64_of(&b[0..2]), b[2]);
            }
            2 => {
                let Some(b) = take(&mut rest, 7) else { break };
                d.ctrl
                    .config_write(u64_of(&b[0..2]) as u32 % 300, b[2], u64_of(&b[3..7]) as u32);
            }
            3 => {
                let Some(b) = take(&mut rest, 12) else { break };
                let addr = 0x0080_0000 + u64_of(&b[0..4]) % 0x0100_0000;
                d.ctrl.mem.write(addr, &b[4..12]);
            }
            _ => {
                let Some(b) = take(&mut rest, 66) else { break };
                let admin = b[0] & 1 == 0;
                let (base, db, size) = if admin {
                    (ASQ_ADDR, reg::DOORBELL_BASE, 32u64)
                } else {
                    (IOSQ_ADDR, reg::DOORBELL_BASE + 8, 16)
                };
                let slot = b[1] as u64 % size;
                d.ctrl.mem.write(base + 64 * slot, &b[2..66]);
                d.ctrl.write32(db, ((slot + 1) % size) as u32);
                d.ctrl.write32(db + 4, (b[1] as u64 % size) as u32);
            }
        }
    }
}

/// The NBD server's handshake and request reader under an arbitrary client: the input is what
/// the client sends; the handshake runs on it, and if it reaches transmission the reader turns
/// the rest into messages for the simulation thread. Any panic, or an allocation beyond the
/// server's bounds, is a bug.
pub fn nbd_client(data: &[u8]) {
    use ssdlab::serve::conn::{handshake, read_requests, Credit, Export, Handshake, ToSim};
    use std::io::{Cursor, Read, Write};

    struct Client<'a> {
        input: Cursor<&'a [u8]>,
        written: usize,
    }
    impl Read for Client<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Client<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let export = Export {
        name: "ssd".into(),
        description: "fuzz".into(),
        size: 1 << 30,
        read_only: data.last().is_some_and(|b| b & 1 == 1),
        block_min: 512,
        block_preferred: 4096,
        block_max: 1 << 25,
    };
    let mut c = Client {
        input: Cursor::new(data),
        written: 0,
    };
    let Ok(Handshake::Transmission { .. }) = handshake(&mut c, &export) else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    // No writer gives credit back here: an allowance that never runs out, so the reader never
    // waits (it still takes credit, as it does when served).
    let credit = Credit::with_limit(u64::MAX);
    let block_status = data.last().is_some_and(|b| b & 2 == 2);
    let _ = read_requests(
        &mut std::io::BufReader::new(&mut c),
        0,
        &export,
        block_status,
        &credit,
        &tx,
    );
    drop(tx);
    // Every message the reader produced is a batch of well-formed ones: a request's payload is
    // what its header says, and only writes carry one.
    for m in rx.into_iter().flat_map(|b| match b {
        ToSim::Batch(list) => list,
        other => panic!("the reader sends batches, not {:?}", std::mem::discriminant(&other)),
    }) {
        if let ToSim::Request { header, data, .. } = m {
            let expect = if header.kind == 1 {
                header.length as usize
            } else {
                0
            };
            assert_eq!(data.len(), expect);
        }
    }
}

/// The session-log reader (`ssdlab run CONFIG --trace LOG` of a log `ssdlab serve --log`
/// wrote) under an arbitrary log: the input, decompressed if it asks to be, replayed on a
/// small device. Any panic is a bug; an error is the reader's answer. The decompressed text is
/// cut at 64 KiB and the device is small, so a run is bounded (a log of huge requests is
/// legal, and would only be slow).
pub fn session_log(data: &[u8]) {
    use ssdlab::run::RunOptions;
    use ssdlab::workload::trace::input;
    use std::io::{BufReader, Read};
    use std::sync::OnceLock;

    static CFG: OnceLock<ssdlab::SsdConfig> = OnceLock::new();
    // small-tlc cut to a quarter (about 224 MiB of logical space), empty: every input starts from the same
    // device, and no preconditioning runs before it.
    let cfg = CFG.get_or_init(|| {
        let sets = [
            "nand.blocks_per_plane=32",
            // A 32-block plane's GC threshold is one block.
            "ftl.gc.urgent_free_blocks=1",
            "precondition.fill=\"none\"",
            "precondition.random_overwrite=0.0",
        ];
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        ssdlab::SsdConfig::resolve("small-tlc", &sets).expect("preset")
    });
    let Ok((decoded, _)) = input::decode(Box::new(std::io::Cursor::new(data.to_vec()))) else {
        return;
    };
    let bounded: input::Input = Box::new(BufReader::new(decoded.take(64 << 10)));
    let opts = RunOptions {
        seed: 1,
        record_requests: false,
        stats_interval: None,
        power_cut_event: None,
        power_cut_at: None,
    };
    let _ = ssdlab::serve::session::replay_input(cfg, "fuzz", bounded, &opts, &mut |_, _| true);
}
