//! What a serve session is asked to do: its options (`ssdlab serve`'s flags), their checks
//! before anything is built, the drives NBD cannot carry, and the options as the result's `job`.

use super::access::Door;
use super::data::DataSpec;
use super::net::Listen;
use super::tls::{Credentials, TlsMode};
use crate::config::{BackendKind, SsdConfig};
use crate::error::{got, says, Invalid};
use crate::error::{Error, Result};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Realtime,
    Logical,
}

impl Clock {
    pub fn parse(text: &str) -> Result<Clock> {
        match text {
            "realtime" => Ok(Clock::Realtime),
            "logical" => Ok(Clock::Logical),
            _ => Err(Error::bad_serve(Invalid::option(
                "--clock",
                format!("{text:?}"),
                "realtime or logical",
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Clock::Realtime => "realtime",
            Clock::Logical => "logical",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub listen: Listen,
    pub export_name: String,
    pub read_only: bool,
    pub clock: Clock,
    /// Wall seconds per simulated second (realtime clock): 2 plays the drive at half speed.
    pub time_scale: f64,
    pub seed: u64,
    /// Where the drive's bytes live.
    pub data: DataSpec,
    /// Write the session log here (`ssdlab run --trace` replays it).
    pub log: Option<PathBuf>,
    /// With `log`: write each logged write's bytes here, in the log's order.
    pub log_data: Option<PathBuf>,
    /// TLS: off, on or required; None is `require` with credentials, else off.
    pub tls: Option<TlsMode>,
    pub tls_credentials: Option<Credentials>,
    /// Most connections at once (1 to [`MAX_CONNECTIONS`]); more are closed at once.
    pub max_connections: usize,
    /// Serve an address other machines reach without TLS and client authentication.
    pub insecure_network: bool,
    /// Arm the drive's power-loss model (page-mapped FTL only), so that the session can be
    /// cut: [`Tick::PowerCut`] (SIGUSR1 to `ssdlab serve`) or `power_cut_event`.
    pub power_cuts: bool,
    /// Cut the power once the device has handled this many events (logical clock only: on the
    /// realtime clock the events depend on the wall clock).
    pub power_cut_event: Option<u64>,
}

impl ServeOptions {
    /// TLS as asked, or by default: required when credentials are given, off otherwise.
    pub(super) fn tls_mode(&self) -> TlsMode {
        self.tls.unwrap_or(match self.tls_credentials {
            Some(_) => TlsMode::Require,
            None => TlsMode::Off,
        })
    }
}

/// What the live figures' callback asks of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    Go,
    Stop,
    /// Cut the drive's power now (`ServeOptions::power_cuts`), then serve the recovered drive.
    PowerCut,
}

/// The default of `--max-connections`: a few clients with a few connections each (nbdcopy
/// opens four, QEMU one). Each connection is two threads.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;
/// The most `--max-connections` may be.
pub const MAX_CONNECTIONS: usize = 1024;

/// Refuse a drive NBD cannot carry: a zoned drive's host must write at write pointers and
/// reset zones, and NBD has no zone commands (no report, no reset, no append); a raw device
/// (or seed 002's fusion device, raw NAND under a host-side FTL) has no logical blocks.
pub(crate) fn check_servable(cfg: &SsdConfig) -> Result<()> {
    if cfg.backend_kind() == BackendKind::Zoned {
        return Err(Error::bad_serve(Invalid::unnamed(
            "serve",
            says(format!(
                "{} is a zoned drive ([zns]): NBD has no zones (no write pointers, resets or \
                 reports), so a block client could not write it; serve a conventional config",
                cfg.meta.name
            )),
        )));
    }
    if matches!(cfg.backend_kind(), BackendKind::Raw | BackendKind::Fusion) {
        return Err(Error::bad_serve(Invalid::unnamed(
            "serve",
            says("a raw device (ftl.kind = \"none\") has no logical blocks to export"),
        )));
    }
    Ok(())
}

/// The options' own checks, before anything is built: one line naming the option, the value
/// and what was expected.
pub(super) fn check_options(opts: &ServeOptions) -> Result<()> {
    if opts.power_cut_event.is_some() && opts.clock != Clock::Logical {
        return Err(Error::bad_serve(Invalid::unnamed(
            "--power-cut-event",
            says(
                "expected --clock logical (on the realtime clock the events a session reaches \
                 depend on the wall clock; SIGUSR1 cuts a realtime session)",
            ),
        )));
    }
    if opts.power_cut_event == Some(0) {
        return Err(Error::bad_serve(Invalid::unnamed(
            "--power-cut-event",
            got(
                "0",
                "at least 1 (the device event after which the power fails)",
            ),
        )));
    }
    if !(opts.time_scale.is_finite() && opts.time_scale > 0.0 && opts.time_scale <= 1e6) {
        return Err(Error::bad_serve(Invalid::option(
            "--time-scale",
            opts.time_scale,
            "a number above 0, at most 1e6",
        )));
    }
    if opts.export_name.len() > 4096 {
        return Err(Error::bad_serve(Invalid::unnamed(
            "--export-name",
            got(
                format!("{} bytes", opts.export_name.len()),
                "at most 4096 bytes",
            ),
        )));
    }
    if !(1..=MAX_CONNECTIONS).contains(&opts.max_connections) {
        return Err(Error::bad_serve(Invalid::option(
            "--max-connections",
            opts.max_connections,
            format!("1 to {MAX_CONNECTIONS}"),
        )));
    }
    Ok(())
}

/// The session's settings and connections, as the result's `job`.
pub(super) fn session_job(
    opts: &ServeOptions,
    tls_mode: TlsMode,
    tls_auth: Option<&str>,
    door: &Door,
    power_cuts: Option<serde_json::Value>,
) -> serde_json::Value {
    serde_json::json!({"serve": {
        "listen": opts.listen.text(),
        "tls": tls_mode.name(),
        "tls_auth": tls_auth,
        "max_connections": opts.max_connections,
        "insecure_network": opts.insecure_network,
        "connections": door.json(),
        "export_name": opts.export_name,
        "read_only": opts.read_only,
        "clock": opts.clock.name(),
        "time_scale": opts.time_scale,
        "log": opts.log.as_ref().map(|p| p.display().to_string()),
        "power_cuts": power_cuts,
    }})
}
