//! The PCIe link: per-lane signalling rate and line encoding by generation, lanes, max payload
//! and per-TLP overhead. "ideal" is a link with neither bandwidth limit nor latency.
//!
//! Rates and encodings: PCIe Base Specification (Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b; Gen3
//! 8 GT/s, Gen4 16 GT/s, Gen5 32 GT/s with 128b/130b); seed 004 Table 2 lists Gen1–3 the same way
//! (4000, 2000 and 1015.625 ps per byte per lane).

use crate::config::LinkSpec;
use crate::sim::SimTime;

/// Picoseconds to move one byte on one lane, after line encoding.
pub fn ps_per_byte_per_lane(gen: u8) -> f64 {
    let (gt_s, payload_bits, line_bits) = match gen {
        1 => (2.5e9, 8.0, 10.0),
        2 => (5e9, 8.0, 10.0),
        3 => (8e9, 128.0, 130.0),
        4 => (16e9, 128.0, 130.0),
        _ => (32e9, 128.0, 130.0),
    };
    // bytes per second per lane = GT/s × (payload/line) / 8
    1e12 / (gt_s * payload_bits / line_bits / 8.0)
}

/// One direction of the link as a cost model: how long `bytes` of payload take to cross it,
/// split into TLPs of at most `max_payload` bytes with `overhead` bytes each.
#[derive(Clone, Copy, Debug)]
pub struct LinkCost {
    /// Picoseconds per byte across all lanes, scaled by 1024 to keep fractions in integers.
    ps_per_byte_x1024: u64,
    max_payload: u64,
    overhead: u64,
    pub latency: SimTime,
    pub ideal: bool,
}

impl LinkCost {
    pub fn new(spec: LinkSpec, max_payload: u64, overhead: u64, latency: SimTime) -> LinkCost {
        match spec {
            LinkSpec::Ideal => LinkCost {
                ps_per_byte_x1024: 0,
                max_payload,
                overhead: 0,
                latency: SimTime::ZERO,
                ideal: true,
            },
            LinkSpec::Pcie { gen, lanes } => {
                let ps = ps_per_byte_per_lane(gen) / lanes as f64;
                LinkCost {
                    ps_per_byte_x1024: (ps * 1024.0).round() as u64,
                    max_payload,
                    overhead,
                    latency,
                    ideal: false,
                }
            }
        }
    }

    /// No PCIe link (another interface carries the commands): only the one-way latency.
    pub fn latency_only(latency: SimTime) -> LinkCost {
        LinkCost {
            ps_per_byte_x1024: 0,
            max_payload: 4096,
            overhead: 0,
            latency,
            ideal: true,
        }
    }

    /// Wire time of `bytes` of payload (0 bytes: one header-only TLP, e.g. a read request).
    #[inline]
    pub fn wire_time(&self, bytes: u64) -> SimTime {
        if self.ideal {
            return SimTime::ZERO;
        }
        let tlps = bytes.div_ceil(self.max_payload).max(1);
        let wire_bytes = bytes.saturating_add(tlps.saturating_mul(self.overhead));
        SimTime::of_bytes(wire_bytes, self.ps_per_byte_x1024)
    }

    /// Payload bandwidth in bytes per second for large transfers (for reports).
    pub fn payload_bytes_per_s(&self) -> f64 {
        if self.ideal {
            return f64::INFINITY;
        }
        let eff = self.max_payload as f64 / (self.max_payload + self.overhead) as f64;
        1e12 * 1024.0 / self.ps_per_byte_x1024 as f64 * eff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed004_table2_per_byte_times() {
        assert_eq!(ps_per_byte_per_lane(1), 4000.0);
        assert_eq!(ps_per_byte_per_lane(2), 2000.0);
        assert!((ps_per_byte_per_lane(3) - 1015.625).abs() < 1e-9);
    }

    #[test]
    fn parse_and_cost() {
        assert_eq!(
            LinkSpec::parse("pcie3x4").unwrap(),
            LinkSpec::Pcie { gen: 3, lanes: 4 }
        );
        assert!(LinkSpec::parse("pcie9x4").is_err());
        assert!(LinkSpec::parse("usb").is_err());
        let c = LinkCost::new(LinkSpec::parse("pcie1x1").unwrap(), 256, 0, SimTime::ZERO);
        assert_eq!(c.wire_time(1000), SimTime(4_000_000));
        let ideal = LinkCost::new(LinkSpec::Ideal, 256, 24, SimTime::from_ns(100));
        assert_eq!(ideal.wire_time(1 << 20), SimTime::ZERO);
    }
}
