//! The live device: a simulated drive served over the Network Block Device protocol to real,
//! unmodified clients (qemu-img, qemu-io, nbdcopy, fio, a QEMU guest).
//!
//! Why a server of our own: the NBD servers on crates.io implement part of the protocol
//! (no structured replies or INFO_BLOCK_SIZE) and trust a client's lengths; this one bounds
//! every length before it allocates (`proto`, `conn`).
//!
//! Threads: one accepts connections; each connection has a reader (requests in) and a writer
//! (replies out); one simulation thread — the caller's — owns the [`Device`] and its data store,
//! submits each request through the device boundary, runs the model, and hands replies to the
//! writers. A client that asks for TLS (NBD_OPT_STARTTLS) has its stream wrapped in TLS
//! (`tls`) before the options go on; who may connect at all is `access`'s.
//!
//! Two clocks: `realtime` maps simulated time onto the wall clock (a reply leaves when the wall
//! clock reaches its simulated completion, times `time_scale`), `logical` replies as soon as the
//! model has finished the request.

mod accept;
pub mod access;
mod commands;
pub mod conn;
pub mod cut;
pub mod data;
pub mod net;
mod options;
mod outbox;
pub mod proto;
pub mod session;
pub mod tls;

use crate::config::SsdConfig;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::result::RunResult;
use accept::{client_address, close_connections, spawn_acceptor, Shared};
use access::Door;
use commands::take_message;
use conn::{Export, ToSim};
use data::Data;
pub use net::Listen;
use net::Listener;
pub(crate) use options::check_servable;
use options::{check_options, session_job};
pub use options::{Clock, ServeOptions, Tick, DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS};
use outbox::{outbox, Outbox};
use proto::MAX_REQUEST_BYTES;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tls::Tls;

/// Figures of a live session, for the live display.
fn live_json(
    dev: &Device,
    out: &Outbox,
    connections: usize,
    wall_s: f64,
    clock: Clock,
    cuts: &cut::Cuts,
) -> String {
    let host = dev.host();
    let lat = |op: Op| {
        let l = host.latency(op);
        let s = l.summary();
        serde_json::json!({"count": l.count, "bytes": l.bytes, "mean_us": s.mean,
                           "p50_us": s.p50, "p99_us": s.p99})
    };
    // The page FTL's counts, where it keeps the map (none elsewhere); with `--power-cuts` the
    // map checkpoints' programs count too.
    let (host_units, moved, gc_runs) = dev.ftl().map_or((0, 0, 0), |f| {
        (
            f.stats.host_units_written,
            f.stats.gc_units_moved + f.stats.checkpoint_units_written,
            f.stats.gc_runs,
        )
    });
    let waf = if host_units > 0 {
        (host_units + moved) as f64 / host_units as f64
    } else {
        0.0
    };
    serde_json::json!({
        "wall_s": wall_s,
        "simulated_s": dev.now().as_secs_f64(),
        "connections": connections,
        "requests": host.completed(),
        "in_flight": out.pending.len() + out.backlog.len(),
        "read": lat(Op::Read),
        "write": lat(Op::Write),
        "errors": out.errors,
        "write_amplification": waf,
        "gc_runs": gc_runs,
        // The realtime clock's lag behind real time (null on the logical clock).
        "lag": (clock == Clock::Realtime).then(|| {
            let s = out.lag.summary();
            serde_json::json!({"count": out.lag.count, "mean_us": s.mean, "p99_us": s.p99,
                               "max_us": s.max})
        }),
        // Each power cut so far (SIGUSR1 or --power-cut-event), with its recovery.
        "power_cuts": cuts.list,
        "power_cuts_refused": cuts.refused,
    })
    .to_string()
}

/// The calling thread's timer slack at 1 ns while it lives, as it was after. Linux lets a
/// sleeping thread wake up to 50 µs late by default: on the real-time clock each reply would
/// leave that much after its simulated completion (measured: fio's QD1 latency at scale 1 fell
/// from 180–206 µs to 144–153 µs with it).
struct TimerSlack(Option<u64>);

impl TimerSlack {
    #[cfg(target_os = "linux")]
    fn fine() -> TimerSlack {
        // SAFETY: prctl with PR_GET/SET_TIMERSLACK reads or sets a number of the calling
        // thread; no memory is passed.
        let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
        if old <= 0 || unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) } != 0 {
            return TimerSlack(None);
        }
        TimerSlack(Some(old as u64))
    }

    #[cfg(not(target_os = "linux"))]
    fn fine() -> TimerSlack {
        TimerSlack(None)
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(old) = self.0 {
            // SAFETY: as in `fine`.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, old as libc::c_ulong) };
        }
    }
}

/// Serve `cfg` until `tick` (called about four times a second with the live figures as JSON)
/// returns false; returns the session's result. `ready` is called once with the address
/// clients connect to.
pub fn serve(
    cfg: &SsdConfig,
    opts: &ServeOptions,
    ready: &mut dyn FnMut(&str, &str),
    tick: &mut dyn FnMut(&str) -> Tick,
) -> Result<RunResult> {
    check_servable(cfg)?;
    check_options(opts)?;
    let tls_mode = opts.tls_mode();
    let tls = Tls::new(tls_mode, opts.tls_credentials.as_ref())?;
    let network = access::check_exposure(&opts.listen, tls.as_ref(), opts.insecure_network)?;
    let mut dev = Device::new(cfg, opts.seed)?;
    // The data and the log are opened before the server listens: a client never meets a
    // server that is about to fail.
    let log = open_log(cfg, opts)?;
    let data = Data::open(&opts.data, dev.capacity_bytes(), opts.read_only)?;
    let pre_s = crate::run::precondition(&mut dev, cfg, opts.seed)?;
    let power_cuts = opts.power_cuts || opts.power_cut_event.is_some();
    if power_cuts {
        dev.enable_power_loss("--power-cuts")?;
    }
    let export = export_of(cfg, opts, &dev);
    let listener = Listener::bind(&opts.listen)?;
    let _slack = TimerSlack::fine();
    ready(
        &client_address(&listener, tls.as_ref()),
        &access::who_can_connect(&opts.listen, network, tls.as_ref(), opts.max_connections),
    );
    let tls_auth = tls.as_ref().map(|t| t.auth.name());
    let shared = Arc::new(Shared {
        export,
        tls,
        door: Door::default(),
        buffers: Arc::default(),
    });

    let stop = Arc::new(AtomicBool::new(false));
    let open = Arc::new(Mutex::new(Vec::new()));
    let next_conn = Arc::new(AtomicU32::new(0));
    let (to_sim, from_conns) = mpsc::channel::<ToSim>();
    let acceptor = spawn_acceptor(
        listener,
        &shared,
        opts.max_connections,
        to_sim,
        &open,
        &next_conn,
        &stop,
    );

    let mut out = outbox(cfg, &dev, log, data, &shared, power_cuts);
    let mut cuts = cut::Cuts::default();
    let start = Instant::now();
    let scale = opts.time_scale;
    // The simulated time the wall clock has reached (realtime clock).
    let sim_now =
        |start: Instant| SimTime::from_ps((start.elapsed().as_secs_f64() / scale * 1e12) as u64);
    let wall_of = |t: SimTime| start + Duration::from_secs_f64(t.as_secs_f64() * scale);
    let tick_every = Duration::from_millis(250);
    let mut next_tick = Instant::now() + tick_every;
    let result = loop {
        // Wait for a request, the next reply due, the next model event or the next tick.
        let wake = match opts.clock {
            Clock::Realtime => [out.due.peek().map(|d| d.at), dev.next_event_time()]
                .into_iter()
                .flatten()
                .map(wall_of)
                .fold(next_tick, Instant::min),
            Clock::Logical => next_tick,
        };
        let first = match next_message(&from_conns, opts.clock, wake) {
            Ok(m) => m,
            Err(()) => break Ok(()),
        };
        let now_sim = match opts.clock {
            Clock::Realtime => sim_now(start).max(dev.now()),
            Clock::Logical => dev.now(),
        };
        // One turn: the model runs to now, what arrived is queued, what waits is submitted
        // while there is room. The session log records each turn that queues or submits.
        if let Some(log) = &mut out.log {
            log.turn(now_sim);
        }
        if opts.clock == Clock::Realtime {
            dev.run_until(&mut out, now_sim)?;
            // What fell due leaves before the turn takes new requests in: it is late already
            // by the time this thread woke.
            out.send_due(now_sim, Some(&wall_of));
        }
        take_messages(&mut out, &dev, first, &from_conns, now_sim);
        out.submit_backlog(&mut dev, now_sim);
        let cut_now = advance(&mut dev, &mut out, opts, &cuts, sim_now(start))?;
        if cut_now {
            cuts.cut(&mut dev, &mut out, cfg, opts, &open, &next_conn, start)?;
            next_tick = Instant::now();
        }
        // Send what is due.
        match opts.clock {
            Clock::Realtime => out.send_due(sim_now(start), Some(&wall_of)),
            Clock::Logical => out.send_due(SimTime::MAX, None),
        }
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + tick_every;
            let figures = live_json(
                &dev,
                &out,
                out.conns.len(),
                start.elapsed().as_secs_f64(),
                opts.clock,
                &cuts,
            );
            match tick(&figures) {
                Tick::Go => {}
                Tick::Stop => break Ok(()),
                Tick::PowerCut if power_cuts => {
                    cuts.cut(&mut dev, &mut out, cfg, opts, &open, &next_conn, start)?;
                    next_tick = Instant::now();
                }
                Tick::PowerCut => {
                    cuts.refused += 1;
                }
            }
        }
    };
    close_connections(&stop, acceptor, &open, &mut out, from_conns);
    result?;
    // The model finishes what it accepted (its clients have gone): the session's figures are
    // those of whole requests, as a replay of its log gives them.
    dev.run_until(&mut out, SimTime::MAX)?;
    if let Some(log) = out.log.take() {
        log.finish()?;
    }
    let wall = start.elapsed().as_secs_f64();
    let job = session_job(
        opts,
        tls_mode,
        tls_auth,
        &shared.door,
        power_cuts.then(|| cuts.json()),
    );
    let mut result =
        crate::run::build_result(&dev, cfg, job, opts.seed, "server stopped", wall, pre_s);
    save_state_back(&mut dev, cfg, opts, &mut result)?;
    if opts.clock == Clock::Realtime {
        result.wall.reply_lag_us = Some(out.lag.summary());
    }
    result.power_loss = cuts.last.take();
    Ok(result)
}

/// Queue `first` and what else has arrived; the session log marks a turn that queued.
fn take_messages(
    out: &mut Outbox,
    dev: &Device,
    first: Option<ToSim>,
    from_conns: &Receiver<ToSim>,
    now: SimTime,
) {
    for msg in first
        .into_iter()
        .chain(std::iter::from_fn(|| from_conns.try_recv().ok()))
    {
        take_message(out, dev, msg, now);
    }
    if !out.backlog.is_empty() {
        if let Some(log) = &mut out.log {
            log.mark_turn();
        }
    }
}

/// The session log's writer (`--log`, with the written bytes too under `--log-data`).
fn open_log(cfg: &SsdConfig, opts: &ServeOptions) -> Result<Option<session::SessionWriter>> {
    Ok(match &opts.log {
        Some(path) => Some(session::SessionWriter::create(
            path,
            opts.log_data.as_deref(),
            cfg,
            opts.seed,
            opts.clock,
        )?),
        None if opts.log_data.is_some() => {
            return Err(Error::config(
                "--log-data: expected --log too (the bytes belong to the log's writes)".into(),
            ))
        }
        None => None,
    })
}

/// The model's part of a turn, after the requests were submitted: run to `wall_now` (realtime
/// clock), or until nothing is left or the power-cut event is reached (logical clock). True
/// when the power is to be cut now.
fn advance(
    dev: &mut Device,
    out: &mut Outbox,
    opts: &ServeOptions,
    cuts: &cut::Cuts,
    wall_now: SimTime,
) -> Result<bool> {
    let mut cut_now = false;
    match opts.clock {
        Clock::Realtime => dev.run_until(out, wall_now.max(dev.now()))?,
        Clock::Logical => match opts.power_cut_event.filter(|_| cuts.list.is_empty()) {
            Some(n) => {
                let handled = dev.events();
                if handled < n {
                    dev.run(out, n - handled, &mut |_, _| false)?;
                }
                cut_now = dev.events() >= n;
            }
            None => dev.run_until(out, SimTime::MAX)?,
        },
    }
    Ok(cut_now)
}

/// A server started from a saved state writes the drive's state back over it at a clean stop,
/// so that the next start goes on from here (docs/state.md).
fn save_state_back(
    dev: &mut Device,
    cfg: &SsdConfig,
    opts: &ServeOptions,
    result: &mut RunResult,
) -> Result<()> {
    // After the result (the flush of a cache buffer it may need is the shutdown's, not the
    // session's), written whole to a temporary file and renamed, so that a server killed
    // meanwhile leaves the old state intact.
    if let (Some(path), false) = (&cfg.precondition.state, opts.read_only) {
        let made_by = serde_json::json!({
            "ssdlab": env!("CARGO_PKG_VERSION"),
            "serve": {"from": path, "seed": opts.seed},
        })
        .to_string();
        dev.flush_for_save()?;
        let saved = dev.save_state(cfg, std::path::Path::new(path), &made_by)?;
        result.job["serve"]["state_saved"] = serde_json::to_value(saved).expect("json");
    }
    Ok(())
}

/// What the server offers its clients: the drive's size, and the block sizes it prefers.
fn export_of(cfg: &SsdConfig, opts: &ServeOptions, dev: &Device) -> Export {
    let max_cmd = dev.max_cmd_bytes().min(MAX_REQUEST_BYTES as u64) as u32;
    Export {
        name: opts.export_name.clone(),
        description: format!("ssdlab {} ({})", env!("CARGO_PKG_VERSION"), cfg.meta.name),
        size: dev.capacity_bytes(),
        read_only: opts.read_only,
        block_min: 512,
        block_preferred: cfg.map_unit_bytes().min(1 << 20) as u32,
        block_max: MAX_REQUEST_BYTES.max(max_cmd),
    }
}

/// The next message from a connection, waited for until `wake` (Ok(None): none came); Err when
/// every connection's sender has gone.
fn next_message(
    from_conns: &Receiver<ToSim>,
    clock: Clock,
    wake: Instant,
) -> std::result::Result<Option<ToSim>, ()> {
    let timeout = wake.saturating_duration_since(Instant::now());
    if clock == Clock::Realtime && timeout < SPIN_BEFORE_DUE {
        // The last stretch before a reply is due is waited out awake: a sleeping thread
        // wakes a scheduler's latency late (measured: p99 lag 49 µs at QD32, sleeping).
        // Yielding lets the connections' threads run meanwhile on a busy core.
        match spin_until(from_conns, wake) {
            Ok(m) => Ok(m),
            Err(()) => Err(()),
        }
    } else {
        let sleep = match clock {
            Clock::Realtime => timeout - SPIN_BEFORE_DUE,
            Clock::Logical => timeout,
        };
        match from_conns.recv_timeout(sleep) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(()),
        }
    }
}

/// How long before a reply is due (realtime clock) the simulation thread stops sleeping and
/// waits awake, so that the reply leaves on time rather than a wake-up late.
const SPIN_BEFORE_DUE: Duration = Duration::from_micros(50);

/// A message from a connection, or none by `wake`, waited for without sleeping;
/// Err if every connection's sender has gone.
fn spin_until(
    from_conns: &mpsc::Receiver<ToSim>,
    wake: Instant,
) -> std::result::Result<Option<ToSim>, ()> {
    loop {
        match from_conns.try_recv() {
            Ok(m) => return Ok(Some(m)),
            Err(mpsc::TryRecvError::Disconnected) => return Err(()),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if Instant::now() >= wake {
            return Ok(None);
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests;
