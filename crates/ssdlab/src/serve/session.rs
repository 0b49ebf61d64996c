//! The session log: every request the server handed the device model, and the simulated time
//! of each hand-over, so that `ssdlab run CONFIG --trace LOG` replays a live session through
//! the same driver code and gives the same simulated latencies, byte for byte.
//!
//! A text file:
//!
//! ```text
//! # ssdlab session log v1
//! # config small-tlc 3f2a…          (the config's name and hash, for the reader)
//! # seed 1
//! # clock logical
//! at 0                               (the model was run to 0 ps, then these arrived)
//! write 0 4096 0                     (op, byte offset, bytes, queue = connection)
//! write 4096 4096 0 fua              (a FUA write: the driver flushes after it)
//! at 1843000
//! read 0 4096 1
//! flush 0 0 1
//! ```
//!
//! An `at T` line is one turn of the server's loop: the model was run to `T` (ps), the
//! requests below arrived at `T`, then waiting requests were submitted while their queues had
//! room. With the logical clock the model then ran until it was idle. Replaying those turns
//! with the same config and seed repeats every event.

use super::Clock;
use super::{Outbox, Pending};
use crate::config::SsdConfig;
use crate::device::{Device, Flags, Request};
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::run::{RunOptions, RunOutput};
use crate::sim::SimTime;
use crate::workload::trace::formats::{LineError, LineResult};
use crate::workload::trace::input;
use crate::workload::trace::replay::TraceJob;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The first line of every session log.
pub const MAGIC_LINE: &str = "# ssdlab session log v1";

/// Whether the file at `path` is a session log (its first line says so).
pub fn is_session_log(path: &str) -> bool {
    let Ok((mut r, _)) = input::open(path) else {
        return false;
    };
    let mut line = Vec::new();
    matches!(input::read_line(&mut r, &mut line), Ok(Some(false)))
        && line.trim_ascii_end() == MAGIC_LINE.as_bytes()
}

/// The session log being written; a write error is kept and reported when the server stops.
pub struct SessionWriter {
    out: BufWriter<File>,
    path: PathBuf,
    error: Option<std::io::Error>,
    /// `--log-data`: each write's bytes, in the log's order (a replay that moves the bytes
    /// again, as the crash test's does, reads them from there).
    data: Option<(BufWriter<File>, PathBuf)>,
    /// The turn's time, and whether its `at` line is written yet.
    turn: SimTime,
    turn_written: bool,
}

/// `{option} {path}: {why}`: a file an option names that cannot be made or written.
fn file_err(option: &str, path: &Path, why: String) -> Error {
    Error::bad_serve(Invalid::option_says(option, path.display(), why))
}

impl SessionWriter {
    pub fn create(
        path: &Path,
        data: Option<&Path>,
        cfg: &SsdConfig,
        seed: u64,
        clock: Clock,
    ) -> Result<SessionWriter> {
        let file = File::create(path).map_err(|e| file_err("--log", path, e.to_string()))?;
        let data = match data {
            Some(p) => Some((
                BufWriter::with_capacity(
                    1 << 20,
                    File::create(p).map_err(|e| file_err("--log-data", p, e.to_string()))?,
                ),
                p.to_path_buf(),
            )),
            None => None,
        };
        let mut w = SessionWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            error: None,
            data,
            turn: SimTime::ZERO,
            turn_written: false,
        };
        let header = format!(
            "{MAGIC_LINE}\n# config {} {}\n# seed {seed}\n# clock {}\n",
            cfg.meta.name.replace(char::is_whitespace, "_"),
            cfg.hash(),
            clock.name()
        );
        // Written through at once: a path that cannot take the log (a full device, a full
        // disk) is refused when the server starts, not found out when it stops.
        w.put(header.as_bytes());
        if w.error.is_none() {
            w.error = w.out.flush().err();
        }
        match w.error.take() {
            None => Ok(w),
            Some(e) => Err(file_err(
                "--log",
                path,
                format!("the session log cannot be written: {e}"),
            )),
        }
    }

    fn put(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }

    /// A new turn of the server's loop at `at`; its line is written with its first request.
    pub fn turn(&mut self, at: SimTime) {
        self.turn = at;
        self.turn_written = false;
    }

    /// The turn submits: its line is owed even if no request arrived in it.
    pub fn mark_turn(&mut self) {
        if !self.turn_written {
            self.turn_written = true;
            let line = format!("at {}\n", self.turn.0);
            self.put(line.as_bytes());
        }
    }

    /// A request that arrived in this turn.
    pub fn request(&mut self, r: &Request, fua: bool) {
        self.mark_turn();
        let line = format!(
            "{} {} {} {}{}\n",
            r.op.name(),
            r.offset,
            r.len,
            r.queue,
            if fua { " fua" } else { "" }
        );
        self.put(line.as_bytes());
    }

    /// The bytes of the write just logged (None: `len` zeros, a WRITE_ZEROES that must write),
    /// to the `--log-data` file.
    pub fn payload(&mut self, bytes: Option<&[u8]>, len: u64) {
        let Some((out, _)) = &mut self.data else {
            return;
        };
        let written = match bytes {
            Some(b) => out.write_all(b),
            None => std::io::copy(&mut std::io::repeat(0).take(len), out).map(|_| ()),
        };
        if let Err(e) = written {
            self.error.get_or_insert(e);
        }
    }

    /// A comment line (`# text`): replays skip it.
    pub fn note(&mut self, text: &str) {
        let line = format!("# {}\n", text.replace('\n', " "));
        self.put(line.as_bytes());
    }

    pub fn finish(mut self) -> Result<()> {
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                self.error = Some(e);
            }
        }
        if let (None, Some((out, _))) = (&self.error, &mut self.data) {
            if let Err(e) = out.flush() {
                self.error = Some(e);
            }
        }
        match self.error {
            None => Ok(()),
            Some(e) => Err(file_err(
                "--log",
                &self.path,
                format!("the session log could not be written: {e}"),
            )),
        }
    }
}

/// What a session log's header says of the session it came from.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SessionHeader {
    pub config_name: String,
    pub config_hash: String,
    pub seed: Option<u64>,
    pub clock: String,
}

/// One line of a session log, read.
enum Line {
    Comment,
    Turn(SimTime),
    Request(Request, bool),
}

fn parse_line(text: &str) -> LineResult<Line> {
    let fields: Vec<&str> = text.split_ascii_whitespace().collect();
    let number = |name: &'static str, s: &str| -> LineResult<u64> {
        s.parse::<u64>()
            .map_err(|_| LineError::field(name, got(format!("{s:?}"), "a whole number")))
    };
    match fields.as_slice() {
        [] => Ok(Line::Comment),
        [first, ..] if first.starts_with('#') => Ok(Line::Comment),
        ["at", t] => Ok(Line::Turn(SimTime::from_ps(number("at", t)?))),
        [op, offset, len, queue, rest @ ..] => {
            let op = [Op::Read, Op::Write, Op::Trim, Op::Flush]
                .into_iter()
                .find(|o| o.name() == *op)
                .ok_or_else(|| {
                    LineError::field("op", got(format!("{op:?}"), "read, write, trim or flush"))
                })?;
            let fua = match rest {
                [] => false,
                ["fua"] if op == Op::Write => true,
                _ => {
                    return Err(LineError::shape(got(
                        format!("{:?} after the queue", rest.join(" ")),
                        "nothing there but `fua` on a write",
                    )))
                }
            };
            let queue = number("queue", queue)?;
            let queue = u32::try_from(queue).map_err(|_| {
                LineError::field("queue", got(queue, format!("at most {}", u32::MAX)))
            })?;
            let r = Request {
                op,
                offset: number("offset", offset)?,
                len: number("len", len)?,
                queue,
                flags: if fua { Flags::FUA } else { Flags::NONE },
                arrival: SimTime::ZERO,
            };
            Ok(Line::Request(r, fua))
        }
        _ => Err(LineError::shape(got(
            format!("{} fields", fields.len()),
            "`at PS` or `OP OFFSET LEN QUEUE [fua]`",
        ))),
    }
}

/// Replay the session log at `path` on `cfg`: the server's turns, in order, through the
/// server's own driver. `progress(lines, 0)` is called every few thousand lines; returning
/// false stops with [`Error::Interrupted`]. Returns the result and what the header said.
pub fn replay(
    cfg: &SsdConfig,
    path: &str,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(RunOutput, SessionHeader)> {
    let (input, _) = input::open(path)
        .map_err(|e| Error::bad_trace(Invalid::unnamed(path, says(e.to_string()))))?;
    replay_input(cfg, path, input, opts, progress)
}

/// [`replay`] of a log already open (decompressed): `path` names it in errors and the result.
pub fn replay_input(
    cfg: &SsdConfig,
    path: &str,
    mut input: input::Input,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(RunOutput, SessionHeader)> {
    let seed = opts.seed;
    // `{path}, line L[, field `f`]: ...`, as a trace's bad line reads.
    let err = |line: u64, e: LineError| {
        Error::bad_trace(Invalid::of(
            format!("{path}, line {line}"),
            e.field.map(str::to_string),
            e.problem,
        ))
    };
    let shape = |line: u64, words: &str| err(line, LineError::shape(says(words)));
    // A session log comes from a server, which serves no zoned or raw drive: neither does its
    // replay.
    super::check_servable(cfg)?;
    let mut dev = Device::new(cfg, seed)?;
    if opts.record_requests {
        dev.record_requests();
    }
    let pre_s = crate::run::precondition(&mut dev, cfg, seed)?;
    let capacity = dev.capacity_bytes();
    let mut out = Outbox::new(cfg.map_unit_bytes(), None, None);
    let mut header = SessionHeader::default();
    let mut clock: Option<Clock> = None;
    let mut turn: Option<SimTime> = None;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let start = std::time::Instant::now();
    // End the turn at `t`: submit what waits, and with the logical clock run to idle.
    let end_turn = |dev: &mut Device, out: &mut Outbox, t: SimTime, clock| -> Result<()> {
        out.submit_backlog(dev, t);
        if clock == Clock::Logical {
            dev.run_until(out, SimTime::MAX)?;
        }
        Ok(())
    };
    loop {
        let read = input::read_line(&mut input, &mut buf)
            .map_err(|e| Error::bad_trace(Invalid::unnamed(path, says(e.to_string()))))?;
        let Some(too_long) = read else { break };
        line_no += 1;
        if line_no.is_multiple_of(4096) && !progress(line_no, 0) {
            return Err(Error::Interrupted);
        }
        if too_long {
            return Err(shape(line_no, "the line is too long"));
        }
        let text =
            std::str::from_utf8(&buf).map_err(|_| shape(line_no, "the line is not UTF-8 text"))?;
        if line_no == 1 {
            if text.trim_end() != MAGIC_LINE {
                return Err(shape(
                    1,
                    &format!("expected {MAGIC_LINE:?} (not a session log)"),
                ));
            }
            continue;
        }
        if let Some(rest) = text.strip_prefix("# ") {
            read_header(rest, &mut header, &mut clock).map_err(|m| err(line_no, m))?;
            continue;
        }
        match parse_line(text).map_err(|m| err(line_no, m))? {
            Line::Comment => {}
            Line::Turn(t) => {
                let clock = clock
                    .ok_or_else(|| shape(line_no, "a turn before the header's `# clock` line"))?;
                check_turn(t, turn).map_err(|m| err(line_no, m))?;
                if let Some(prev) = turn {
                    end_turn(&mut dev, &mut out, prev, clock)?;
                }
                dev.run_until(&mut out, t)?;
                turn = Some(t);
            }
            Line::Request(mut r, fua) => {
                let Some(t) = turn else {
                    return Err(shape(line_no, "a request before the first `at` line"));
                };
                if r.offset.checked_add(r.len).is_none_or(|e| e > capacity) {
                    let m = format!(
                        "the range {} + {} bytes is past the device's {capacity} bytes (a log of another config?)",
                        r.offset, r.len
                    );
                    return Err(shape(line_no, &m));
                }
                r.arrival = t;
                let p = Pending::replayed(&r, fua);
                out.backlog.push_back((r, p));
            }
        }
    }
    if let (Some(t), Some(clock)) = (turn, clock) {
        end_turn(&mut dev, &mut out, t, clock)?;
    }
    dev.run_until(&mut out, SimTime::MAX)?;
    if dev.now() == SimTime::MAX {
        return Err(Error::bad_trace(Invalid::unnamed(path, says(format!(
            "the simulated clock reached its end (2^64 ps, about 213 days) with {} requests completed: the log's times are too late for it (the result would show later requests completing in 0 ps)",
            dev.host().completed()
        )))));
    }
    let job = serde_json::json!({"session": {"log": path, "recorded": &header}});
    let result = crate::run::build_result(
        &dev,
        cfg,
        job,
        seed,
        "session end",
        start.elapsed().as_secs_f64(),
        pre_s,
    );
    let records = dev.take_records();
    Ok((
        RunOutput {
            result,
            records,
            interrupted: false,
            flow_records: None,
        },
        header,
    ))
}

/// A header line (`# config NAME HASH`, `# seed N`, `# clock CLOCK`; `rest` is what follows
/// the `# `) into `header`, and the clock the log was made on; other comments are skipped.
fn read_header(
    rest: &str,
    header: &mut SessionHeader,
    clock: &mut Option<Clock>,
) -> LineResult<()> {
    let mut words = rest.split_ascii_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("config"), Some(name), Some(hash)) => {
            header.config_name = name.to_string();
            header.config_hash = hash.to_string();
        }
        (Some("seed"), Some(s), None) => header.seed = s.parse().ok(),
        (Some("clock"), Some(c), None) => {
            *clock = Some(Clock::parse(c).map_err(|_| {
                LineError::field("clock", got(format!("{c:?}"), "realtime or logical"))
            })?);
            header.clock = c.to_string();
        }
        _ => {}
    }
    Ok(())
}

/// A turn's time `t`, after the turn before it (`prev`): not before it, and before the end of
/// the simulated clock.
fn check_turn(t: SimTime, prev: Option<SimTime>) -> LineResult<()> {
    if t == SimTime::MAX {
        return Err(LineError::field(
            "at",
            got(
                format!("{} ps, the end of the simulated clock (2^64 ps)", t.0),
                "an earlier time (every request from there on would take 0 ps)",
            ),
        ));
    }
    match prev {
        Some(prev) if t < prev => Err(LineError::field(
            "at",
            got(
                format!("{} ps", t.0),
                format!("{} ps or later (the turn before it)", prev.0),
            ),
        )),
        _ => Ok(()),
    }
}

/// A trace job whose trace is a session log: the log says when each request arrived and on
/// which queue, so the replay options (mode, iodepth, queues, …) have nothing to change; a
/// job that sets one is refused rather than silently not doing what it asks.
pub fn run_trace_job(
    cfg: &SsdConfig,
    tjob: &TraceJob,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    let given = serde_json::to_value(tjob).expect("trace job serialises");
    let plain: TraceJob = serde_json::from_value(serde_json::json!({"trace": tjob.trace}))
        .expect("a trace job of a trace alone");
    let plain = serde_json::to_value(&plain).expect("trace job serialises");
    if let (Some(given), Some(plain)) = (given.as_object(), plain.as_object()) {
        for (field, value) in given {
            let free = matches!(field.as_str(), "name" | "trace")
                || (field == "format"
                    && matches!(value.as_str(), None | Some("" | "auto" | "session")));
            if !free && plain.get(field) != Some(value) {
                return Err(Error::bad_job(Invalid::says("trace job", field.to_string(), format!("{} is a session log, replayed as the server took it; `{field}` = {value} does not apply", tjob.trace))));
            }
        }
    }
    let (mut out, header) = replay(cfg, &tjob.trace, opts, progress)?;
    out.result.job = given;
    let replayed = out.result.sim.requests;
    out.result.trace = Some(serde_json::json!({
        "format": "session",
        "log": tjob.trace,
        "records": replayed,
        "replayed": replayed,
        "passes": 1,
        "recorded": header,
        // The replay repeats the session's figures exactly only on the same device and seed.
        "same_config": header.config_hash == cfg.hash(),
        "same_seed": header.seed == Some(opts.seed),
    }));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay_body(name: &str, body: &str) -> Result<(RunOutput, SessionHeader)> {
        let path = std::env::temp_dir().join(format!("ssdlab-{name}-{}.log", std::process::id()));
        let text = format!("{MAGIC_LINE}\n# config x y\n# seed 1\n# clock logical\n{body}");
        std::fs::write(&path, text).unwrap();
        let cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
        let opts = RunOptions::seeded(1);
        let out = replay(&cfg, path.to_str().unwrap(), &opts, &mut |_, _| true);
        std::fs::remove_file(&path).unwrap();
        out
    }

    #[test]
    fn a_log_path_that_cannot_take_the_log_is_refused_at_start() {
        // /dev/full: the error came when the server stopped, after the session (defect 8).
        let cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
        let e = SessionWriter::create(Path::new("/dev/full"), None, &cfg, 1, Clock::Logical)
            .err()
            .expect("a full device is refused")
            .to_string();
        assert!(
            e.starts_with("--log /dev/full: the session log cannot be written"),
            "{e}"
        );
    }

    #[test]
    fn a_log_that_reaches_the_clock_s_end_is_an_error() {
        // A turn at the clock's end, or one just before it: the requests there completed in
        // 0 ps and the result said nothing of it (issue 45, defect 4).
        let e = replay_body("at-max", "at 18446744073709551615\nwrite 0 4096 0\n")
            .err()
            .expect("a turn at the clock's end is refused")
            .to_string();
        assert!(
            e.contains("line 5, field `at`: got 18446744073709551615 ps")
                && e.contains("end of the simulated clock"),
            "{e}"
        );
        let e = replay_body(
            "at-late",
            "at 18446744073709000000\nwrite 0 4096 0\nat 18446744073709000001\nread 0 4096 0\n",
        )
        .err()
        .expect("a log whose requests pass the clock's end is refused")
        .to_string();
        assert!(e.contains("the simulated clock reached its end"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        replay_body("ok", "at 0\nwrite 0 4096 0\nat 5\nread 0 4096 0\n").unwrap();
    }
}
