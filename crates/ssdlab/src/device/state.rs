//! A saved drive state (docs/state.md): the file `ssdlab precondition --save` writes and
//! `precondition.state` loads, so that an experiment preconditions once.
//!
//! The file: the magic `SSDLABst`, the format version, the *key* (the config fields that give
//! the state its shape, one `name = value` line each: a state made for another geometry is
//! refused, naming each field that differs), a description of what made it, the FTL's
//! sections (`ftl/state.rs`), and a CRC-32 of everything before it. Little-endian arrays
//! written in bulk rather than a generic serializer: the large tables load at the speed the
//! disk reads, and the map tables, mostly closed form after preconditioning, are written as
//! the chunks that hold anything (docs/state.md has the figures).

use super::Device;
use crate::config::SsdConfig;
use crate::error::{got, says, Error, Invalid, Result};
use crate::ftl::state_io::{StateReader, StateWriter, STATE_FILE};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SSDLABst";
/// Bumped whenever the sections change; a file of another version is refused.
pub const FORMAT_VERSION: u32 = 1;
/// The most bytes the key or the description may take (a file claiming more is refused).
const MOST_TEXT: u64 = 1 << 16;

/// The config fields a state's shape depends on, as `(name, value)`: the geometry, the map
/// unit, the logical space, the stripe, the map's kind and its translation pages, the write
/// streams and whether blocks wear out. Policies (GC, wear levelling, timing, the host) are
/// not in it: a state may be loaded under other ones, which is what a sweep over them wants.
pub fn state_key(cfg: &SsdConfig) -> Vec<(&'static str, String)> {
    let n = &cfg.nand;
    let json = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => s,
        v => v.to_string(),
    };
    vec![
        ("back end", cfg.backend_kind().name().to_string()),
        ("nand.channels", n.channels.to_string()),
        (
            "nand.packages_per_channel",
            n.packages_per_channel.to_string(),
        ),
        ("nand.dies_per_package", n.dies_per_package.to_string()),
        ("nand.planes_per_die", n.planes_per_die.to_string()),
        ("nand.blocks_per_plane", n.blocks_per_plane.to_string()),
        ("nand.pages_per_block", n.pages_per_block.to_string()),
        ("nand.page_size (bytes)", n.page_size.0.to_string()),
        ("ftl.map_unit (bytes)", cfg.map_unit_bytes().to_string()),
        (
            "logical units (ftl.over_provisioning)",
            cfg.logical_units().to_string(),
        ),
        (
            "ftl.allocation",
            json(serde_json::to_value(cfg.ftl.allocation).unwrap_or_default()),
        ),
        (
            "ftl.superblock_planes",
            cfg.superblock_planes()
                .map_or("every plane".into(), |d| d.to_string()),
        ),
        (
            "translation pages (ftl.mapping, ftl.mapping_entry)",
            cfg.translation_pages()
                .map_or("none".into(), |(per, pages)| format!("{pages} of {per}")),
        ),
        ("ftl.streams", cfg.write_streams().to_string()),
        (
            "ftl.stream_policy",
            json(serde_json::to_value(cfg.ftl.stream_policy).unwrap_or_default()),
        ),
        ("ftl.gc.per_stream", cfg.gc_per_stream().to_string()),
        ("[reliability]", cfg.reliability.is_some().to_string()),
    ]
}

fn key_text(cfg: &SsdConfig) -> String {
    state_key(cfg)
        .iter()
        .map(|(k, v)| format!("{k} = {v}\n"))
        .collect()
}

/// What [`Device::save_state`] wrote.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SavedState {
    pub path: String,
    pub bytes: u64,
    pub save_seconds: f64,
}

/// The origin of a refused save (`saving a drive state: ...`).
const SAVING: &str = "saving a drive state";

/// `saving a drive state to {path}: {why}`: the file could not be written (origin and path as
/// data, the system's words).
fn save_err(path: &Path, e: &std::io::Error) -> Error {
    Error::bad_config(Invalid::option_says(
        "saving a drive state to",
        path.display(),
        e.to_string(),
    ))
}

/// `state file {path}: {why}`: a state file that cannot be loaded (origin and path as data).
fn state_file_err(path: &str, why: String) -> Error {
    Error::bad_config(Invalid::option_says(STATE_FILE, path, why))
}

impl Device {
    /// Save this drive's state to `path` (written whole to a temporary file beside it, then
    /// renamed over it, so `path` never holds half a state). `made_by` describes what brought
    /// the drive here (kept in the file, shown by nothing that decides results). The drive must
    /// be at rest: no command in flight, no dirty line in a cache buffer, no GC under way.
    pub fn save_state(&self, cfg: &SsdConfig, path: &Path, made_by: &str) -> Result<SavedState> {
        let t0 = std::time::Instant::now();
        if let Some(why) = cfg.state_unsupported() {
            return Err(Error::bad_config(Invalid::unnamed(
                SAVING,
                says(format!(
                    "not supported for {why}; only the page-mapped FTL (ftl.kind = \"page\", \
                     full or cached map) saves one"
                )),
            )));
        }
        let ftl = self.page_ftl()?;
        let busy = if !self.cmds.is_empty() {
            Some(format!("{} commands in flight", self.cmds.len()))
        } else if let Some(d) = self
            .cache
            .buffer()
            .map(|c| c.dirty_lines())
            .filter(|&d| d > 0)
        {
            Some(format!("the cache buffer holds {d} dirty lines"))
        } else {
            ftl.unsaveable()
        };
        if let Some(why) = busy {
            return Err(Error::bad_device(Invalid::unnamed(
                "saving a drive state",
                says(format!("{why}; a state is saved from a drive at rest")),
            )));
        }
        let tmp = temporary_beside(path)?;
        let written = (|| -> std::io::Result<u64> {
            let file = std::fs::File::create(&tmp)?;
            let mut w = StateWriter::new(BufWriter::with_capacity(1 << 20, file));
            w.bytes(MAGIC)?;
            w.u32(FORMAT_VERSION)?;
            w.str(&key_text(cfg))?;
            w.str(made_by)?;
            ftl.save_state(&mut w)?;
            let file = w.finish()?.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            file.metadata().map(|m| m.len())
        })();
        let bytes = match written {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(save_err(path, &e));
            }
        };
        if let Err(e) = std::fs::rename(&tmp, path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(save_err(path, &e));
        }
        Ok(SavedState {
            path: path.display().to_string(),
            bytes,
            save_seconds: t0.elapsed().as_secs_f64(),
        })
    }

    /// The page-mapped FTL that keeps the map, whose state a saved state is; an error on
    /// another back end (`SsdConfig::state_unsupported` refuses their configs first).
    fn page_ftl(&self) -> Result<&crate::ftl::AnyFtl> {
        self.backend.page_ftl().ok_or_else(|| {
            Error::bad_config(Invalid::unnamed(
                SAVING,
                says(format!(
                    "only the page-mapped FTL (ftl.kind = \"page\", full or cached map) saves \
                     one; this device's back end is {}",
                    self.backend.kind().name()
                )),
            ))
        })
    }

    /// What a drive does at a clean shutdown before its state is saved: a cache buffer's dirty
    /// lines written to flash (a FLUSH, and the drive run until idle). Its requests are not a
    /// result's: the caller has built the result before.
    pub fn flush_for_save(&mut self) -> Result<()> {
        if self.cache.buffer().is_some_and(|c| c.dirty_lines() > 0) {
            let now = self.now();
            self.submit(
                now,
                crate::request::Request {
                    op: crate::request::Op::Flush,
                    offset: 0,
                    len: 0,
                    queue: 0,
                    flags: crate::request::Flags::default(),
                    arrival: now,
                },
            )?;
            self.run_to_idle()?;
        }
        // The state holds the whole map: the power-loss model's checkpoint pages, superseded,
        // are let go (and leave the map, whose size the state's reader checks).
        if let Some(ftl) = self.backend_mut().page_ftl_mut() {
            ftl.drop_checkpoint_pages();
        }
        Ok(())
    }

    /// Load the state at `path` into this fresh drive (`precondition.state`); returns what
    /// made it. A file not a state, of another format version, made for another geometry
    /// (each differing field named), truncated or damaged is refused with one error; the drive
    /// is then only fit to be dropped.
    pub(super) fn load_state(&mut self, cfg: &SsdConfig, path: &str) -> Result<String> {
        let file = std::fs::File::open(path)
            .map_err(|e| state_file_err(path, format!("cannot open it: {e}")))?;
        let mut r = StateReader::new(BufReader::with_capacity(1 << 20, file), path);
        if r.bytes(MAGIC.len(), "magic")? != MAGIC {
            return Err(r.error("its first bytes are not a drive state's (`SSDLABst`)"));
        }
        let version = r.u32("format version")?;
        if version != FORMAT_VERSION {
            return Err(r.error(&format!(
                "format version {version}, expected {FORMAT_VERSION}"
            )));
        }
        let key = r.str("key", MOST_TEXT)?;
        let differ = key_differences(&key, cfg);
        if !differ.is_empty() {
            return Err(state_file_err(
                path,
                format!(
                    "made for another drive: {}; load it with the config it was saved from, or \
                     make a new state with `ssdlab precondition --save`",
                    differ.join(", ")
                ),
            ));
        }
        let made_by = r.str("description", MOST_TEXT)?;
        let kind = self.backend.kind();
        let Some(ftl) = self.backend.page_ftl_mut() else {
            return Err(state_file_err(
                path,
                format!(
                    "only the page-mapped FTL loads a state; this device's back end is {}",
                    kind.name()
                ),
            ));
        };
        ftl.load_state(&mut r)?;
        r.finish()?;
        Ok(made_by)
    }
}

/// The fields of `key` (a state's) that differ from `cfg`'s, as "name: the state's X, the
/// config's Y".
fn key_differences(key: &str, cfg: &SsdConfig) -> Vec<String> {
    let theirs: Vec<(&str, &str)> = key.lines().filter_map(|l| l.split_once(" = ")).collect();
    let mut out = Vec::new();
    for (name, mine) in state_key(cfg) {
        match theirs.iter().find(|(k, _)| *k == name) {
            Some((_, v)) if *v == mine => {}
            Some((_, v)) => out.push(format!("{name}: the state's {v}, the config's {mine}")),
            None => out.push(format!(
                "{name}: missing from the state, the config's {mine}"
            )),
        }
    }
    for (k, v) in &theirs {
        if !state_key(cfg).iter().any(|(name, _)| name == k) {
            out.push(format!("{k}: the state's {v}, unknown to this version"));
        }
    }
    out
}

/// A fresh name beside `path` for writing it whole before the rename (same directory, so the
/// rename stays on one file system).
fn temporary_beside(path: &Path) -> Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        Error::bad_config(Invalid::unnamed(
            "saving a drive state",
            got(path.display(), "a file name"),
        ))
    })?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp))
}

/// `made_by` for a state preconditioning made: the precondition fields and the seed.
pub fn made_by_precondition(cfg: &SsdConfig, seed: u64) -> String {
    let p = &cfg.precondition;
    let mut out = serde_json::json!({
        "ssdlab": env!("CARGO_PKG_VERSION"),
        "precondition": {"fill": p.fill, "random_overwrite": p.random_overwrite},
        "seed": seed,
    });
    if let Some(from) = &p.state {
        out["precondition"]["state"] = from.clone().into();
    }
    if let Some(h) = p.hot_cold() {
        out["precondition"]["hot_fraction"] = h.hot_fraction.into();
        out["precondition"]["hot_write_fraction"] = h.hot_write_fraction.into();
    }
    out.to_string()
}
