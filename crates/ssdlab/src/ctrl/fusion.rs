//! The thin firmware of seed 002's fusion device (`[nand]` with `ftl.kind = "none"`, and
//! `[pcm]`): raw NAND and PCM behind one host interface, no device FTL.
//!
//! One device exposes two physical spaces; a request names its space with `Flags::PCM`
//! (`request::Space`): without it, the NAND by physical unit as a raw device is addressed
//! (`ctrl::raw`: byte offset = unit × map unit), with it, the PCM by byte address
//! (`media::pcm`). The firmware does what the seed's Fig. 7 gives it and no more:
//!
//! - command distribution: every command takes `controller.cmd_overhead` on the one firmware core
//!   (`Hil::accept`), then goes to the NAND side (`Hil::dispatch`, the raw firmware's checks) or
//!   to the PCM controller (`PcmCtrl::dispatch`) by its space (`Device::handle`);
//! - interrupts: completions go up through the host interface as on any device;
//! - channel control: each side's channels are its own (`Fil`, `PcmMedia`);
//! - hardware information the host reads (`device::HardwareInfo`, the device's boundary):
//!   channel and chip counts, the geometry, and per-block P/E counts from the raw firmware.
//!
//! The two controllers are the ones the single-medium devices use; this module adds only the
//! address check of each space.

use crate::error::{got, says, Error, Invalid, Result};
use crate::request::Op;
use crate::request::Space;

/// Check a request against its space: it must end inside it, and an erase is for NAND blocks.
/// `nand_bytes` is the device's own space (a fusion device's NAND; a single-medium device's
/// whole space), `pcm_bytes` the PCM space, which only a fusion device has (asked only of a
/// request flagged PCM). The refusal is a job error that opens with the request
/// (`read request at byte 4096`) and names its field (`len`, `flags`).
pub fn check_space(
    space: Space,
    op: Op,
    offset: u64,
    len: u64,
    nand_bytes: u64,
    pcm_bytes: impl FnOnce() -> Option<u64>,
) -> Result<()> {
    let (cap, name) = match space {
        Space::Nand => (nand_bytes, "the device's"),
        Space::Pcm => match pcm_bytes() {
            Some(b) => (b, "the PCM space's"),
            None => return Err(no_pcm_space(op, offset)),
        },
    };
    if offset.checked_add(len).is_none_or(|end| end > cap) {
        return Err(past_the_end(op, offset, len, name, cap));
    }
    if space == Space::Pcm && op == Op::Erase {
        return Err(pcm_erase(offset));
    }
    Ok(())
}

/// The request as a refusal opens with it.
fn request(op: Op, offset: u64) -> String {
    format!("{} request at byte {offset}", op.name())
}

#[cold]
#[inline(never)]
fn past_the_end(op: Op, offset: u64, len: u64, space: &str, cap: u64) -> Error {
    Error::bad_job(Invalid::new(
        request(op, offset),
        "len",
        got(
            format_args!("{len} bytes"),
            format!("a request that does not end beyond {space} {cap} bytes"),
        ),
    ))
}

#[cold]
#[inline(never)]
fn pcm_erase(offset: u64) -> Error {
    Error::bad_job(Invalid::unnamed(
        format!("erase request at PCM byte {offset}"),
        says("PCM is updated in place; erases are for NAND blocks"),
    ))
}

#[cold]
#[inline(never)]
fn no_pcm_space(op: Op, offset: u64) -> Error {
    Error::bad_job(Invalid::new(
        request(op, offset),
        "flags",
        got(
            "PCM",
            "no PCM flag: only a fusion device ([nand] and [pcm]) has a PCM space",
        ),
    ))
}
