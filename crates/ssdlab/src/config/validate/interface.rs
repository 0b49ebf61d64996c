//! Checks of the host interface's settings: NVMe's link, queues and arbitration, and IDE, SATA,
//! UFS, eMMC and the DRAM interface.

use super::super::*;
use crate::error::{got, says, Error, Invalid, Problem, Result};

impl SsdConfig {
    /// The host interface: link, queues, transfer sizes, arbitration.
    pub(super) fn validate_interface(&self, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| Err(Error::bad_config(Invalid::new(origin, field, p)));
        let kind = self.interface.kind;
        let i = &self.interface;
        if kind == InterfaceKind::Nvme {
            i.link
                .check_kind(kind)
                .map_err(|p| Error::bad_config(Invalid::new(origin, "interface.link", p)))?;
            if i.io_queues == 0 || i.io_queues > 65535 {
                return err("interface.io_queues", got(i.io_queues, "1 to 65535"));
            }
            if i.queue_depth < 2 || i.queue_depth > 65536 {
                return err(
                    "interface.queue_depth",
                    got(i.queue_depth, "2 to 65536 (NVMe limit)"),
                );
            }
        } else {
            self.validate_other_interface(kind, origin)?;
        }
        if i.mdts.0 < 4096 || !i.mdts.0.is_multiple_of(4096) {
            return err(
                "interface.mdts",
                got(format!("{} bytes", i.mdts.0), "a multiple of 4KiB"),
            );
        }
        if let Some(b) = i.ata.prd_boundary {
            if !matches!(kind, InterfaceKind::Ide | InterfaceKind::Sata) {
                return err(
                    "interface.ata.prd_boundary",
                    got(
                        format!("{} bytes with interface.kind = \"{}\"", b.0, kind.name()),
                        "it absent: PRD entries are bus-master IDE's (kind \"ide\" or \"sata\")",
                    ),
                );
            }
            if b.0 < 4096 || !b.0.is_power_of_two() || b.0 > 1 << 30 {
                return err(
                    "interface.ata.prd_boundary",
                    got(format!("{} bytes", b.0), "a power of two from 4KiB to 1GiB"),
                );
            }
            if let crate::config::PrdBuffer::Offset(o) = i.ata.prd_buffer {
                if o >= b.0 || !o.is_multiple_of(4096) {
                    return err(
                        "interface.ata.prd_buffer",
                        got(
                            format!("{o} bytes"),
                            format!(
                                "a multiple of 4KiB below interface.ata.prd_boundary ({} bytes)",
                                b.0
                            ),
                        ),
                    );
                }
            }
        }
        if i.max_payload.0 < 128 || !i.max_payload.0.is_power_of_two() || i.max_payload.0 > 4096 {
            return err(
                "interface.max_payload",
                got(
                    format!("{} bytes", i.max_payload.0),
                    "128B to 4KiB, a power of two",
                ),
            );
        }
        if i.arbitration_burst == 0 {
            return err("interface.arbitration_burst", got("0", "at least 1"));
        }
        for (field, w) in [
            ("high", i.arbitration_weights.high),
            ("medium", i.arbitration_weights.medium),
            ("low", i.arbitration_weights.low),
        ] {
            if w == 0 || w > ArbitrationWeights::MAX {
                return err(&format!("interface.arbitration_weights.{field}"), got(w, format!("1 to {} (commands per arbitration round; the Arbitration feature's weight fields are 8-bit, 0's-based)", ArbitrationWeights::MAX)));
            }
        }
        if let Some(slots) = i.controller_slots {
            if kind != InterfaceKind::Nvme {
                return err(
                    "interface.controller_slots",
                    says(format!(
                        "given for interface.kind = \"{kind}\", expected it only with \"nvme\""
                    )),
                );
            }
            if slots == 0 {
                return err(
                    "interface.controller_slots",
                    got("0", "at least 1 (commands the controller holds at once)"),
                );
            }
        }
        if i.arbitration == Arbitration::WeightedRoundRobin {
            if kind != InterfaceKind::Nvme {
                return err(
                    "interface.arbitration",
                    got(
                        format!("\"weighted-round-robin\" for interface.kind = \"{kind}\""),
                        "it only with \"nvme\" (other interfaces have one queue)",
                    ),
                );
            }
            if i.controller_slots.is_none() {
                return err("interface.arbitration", got("\"weighted-round-robin\" without interface.controller_slots", "both: with no bound on the commands the controller holds, every SQ is fetched as its doorbell rings and there is nothing to arbitrate"));
            }
        }
        Ok(())
    }

    /// Checks of the IDE, SATA, UFS, eMMC and DRAM-interface settings.
    pub(super) fn validate_other_interface(&self, kind: InterfaceKind, origin: &str) -> Result<()> {
        let err = |field: &str, p: Problem| -> Result<()> {
            Err(Error::bad_config(Invalid::new(origin, field, p)))
        };
        let i = &self.interface;
        let name = match kind {
            InterfaceKind::Ide => "IDE",
            InterfaceKind::Sata => "SATA",
            InterfaceKind::Ufs => "UFS",
            InterfaceKind::Emmc => "eMMC",
            _ => "the DRAM interface",
        };
        if let Err(p) = i.link.check_kind(kind) {
            return err("interface.link", p);
        }
        if i.io_queues != 1 {
            return err(
                "interface.io_queues",
                got(i.io_queues, format!("1: {name} has a single command queue")),
            );
        }
        let (limit, why) = i.queue_depth_limit();
        if i.queue_depth == 0 || i.queue_depth > limit {
            return err(
                "interface.queue_depth",
                got(i.queue_depth, format!("1 to {limit}: {why}")),
            );
        }
        match (kind, i.interrupt) {
            (InterfaceKind::Sata, _) | (_, InterruptMode::Pin | InterruptMode::Polling) => {}
            _ => {
                return err(
                    "interface.interrupt",
                    got(
                        "\"msix\"",
                        format!(
                            "\"pin\" or \"polling\": {name} has no message-signalled interrupts"
                        ),
                    ),
                )
            }
        }
        if matches!(kind, InterfaceKind::Ide | InterfaceKind::Sata) && i.mdts.0 > 32 << 20 {
            return err(
                "interface.mdts",
                got(
                    format!("{} bytes", i.mdts.0),
                    "at most 32MiB (65536 sectors, the ATA 48-bit count)",
                ),
            );
        }
        if kind == InterfaceKind::Emmc {
            let e = &i.emmc;
            if !VERSIONS.contains(&e.version.as_str()) {
                return err(
                    "interface.emmc.version",
                    got(format!("{:?}", e.version), format!("one of {:?}", VERSIONS)),
                );
            }
            if e.command_queue == Some(true) && e.version != "5.1" {
                return err(
                    "interface.emmc.command_queue",
                    got(
                        format!("true with eMMC {}", e.version),
                        "false: command queueing came with eMMC 5.1",
                    ),
                );
            }
        }
        if kind == InterfaceKind::Ufs {
            let u = &i.ufs;
            if u.frame_payload.0 < 16 || u.max_data_segment.0 < 512 {
                return err(
                    "interface.ufs",
                    got(
                        format!(
                            "frame_payload {} and max_data_segment {} bytes",
                            u.frame_payload.0, u.max_data_segment.0
                        ),
                        "at least 16 and 512",
                    ),
                );
            }
        }
        if kind == InterfaceKind::Dram {
            let d = &i.dram;
            if !d.sector.0.is_power_of_two() || d.sector.0 < 512 {
                return err(
                    "interface.dram.sector",
                    got(
                        format!("{} bytes", d.sector.0),
                        "a power of two of at least 512",
                    ),
                );
            }
            if !d.buffer_size.0.is_power_of_two() || d.buffer_size.0 < d.sector.0.max(4096) {
                return err(
                    "interface.dram.buffer_size",
                    got(
                        format!("{} bytes", d.buffer_size.0),
                        "a power of two of at least 4KiB (the buddy allocator splits it in halves)",
                    ),
                );
            }
            if d.chunk_size.0 < 4096 || !d.chunk_size.0.is_multiple_of(d.sector.0) {
                return err(
                    "interface.dram.chunk_size",
                    got(
                        format!("{} bytes", d.chunk_size.0),
                        format!(
                            "at least 4KiB and a multiple of the sector ({} bytes)",
                            d.sector.0
                        ),
                    ),
                );
            }
            if d.banks == 0 || d.bank_interleave.0 == 0 || d.invalidate_span.0 == 0 {
                return err(
                    "interface.dram",
                    says("banks, bank_interleave and invalidate_span must be above zero"),
                );
            }
            // Each bank holds whole interleave stripes of the buffer, so banks beyond the
            // buffer's stripe count are never touched; bounding them here also bounds the two
            // per-bank tables the interface allocates up front (4294967295 banks aborted on a
            // 137 GB allocation).
            let stripes = (d.buffer_size.0 / d.bank_interleave.0).max(1);
            if u64::from(d.banks) > stripes {
                return err("interface.dram.banks", got(d.banks, format!("1 to {stripes} (the buffer's {} bytes in stripes of bank_interleave = {} bytes, one or more stripes per bank)", d.buffer_size.0, d.bank_interleave.0)));
            }
            let write_back = self
                .cache
                .as_ref()
                .is_some_and(|c| c.enabled && c.mode == CacheMode::WriteBack);
            if d.cached_write && !write_back {
                return err("interface.dram.cached_write", says("got true, but there is no write buffer: add a [cache] with mode = \"write-back\""));
            }
            if !d.cached_write && write_back {
                return err("interface.dram.cached_write", says("got false, but [cache] is write-back, which completes writes from the buffer: set cached_write = true or cache.mode = \"write-through\""));
            }
        }
        Ok(())
    }
}
