//! `[reliability]`: endurance, wear-out and read errors of the NAND. Absent: blocks never wear
//! out and every read decodes at once (the model before this section existed, and the default).
//!
//! Sources of the defaults (docs/nand.md, "Endurance and errors", has the long form):
//! - rated P/E cycles per cell type: SLC 100,000 from seed 003 (`003_70a51d8c1c706905.txt`,
//!   the device table: SLC 100k, MLC 10k); MLC 3,000, TLC 1,000 and QLC 300 are assumed typical
//!   ratings of current parts (seed 003's 10k MLC is of its era: set `pe_limit` for it);
//! - the raw bit-error rate grows as a power of the wear (the shape reported by Mielke et al.,
//!   "Bit error rate in NAND flash memories", IRPS 2008) and with the data's age; the
//!   magnitudes here are assumed, of the order those characterisations report (about 1e-4 at
//!   rated endurance for MLC);
//! - ECC: 40 correctable bits per 1 KiB codeword, the BCH strength MLC datasheets of the
//!   2x-nm era ask for (assumed typical);
//! - read retry: up to 8 retries, each with re-tuned read voltages that halve the bit-error
//!   rate (assumed).

use super::nand::CellType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReliabilityConfig {
    /// Program/erase cycles a block takes before it retires as a bad block; absent: the rated
    /// figure of `nand.cell` (SLC 100000, MLC 3000, TLC 1000, QLC 300).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe_limit: Option<u32>,
    /// Fraction of blocks marked bad at the factory, chosen at random (seeded) when the device
    /// is built.
    pub factory_bad_block_rate: f64,
    /// Raw bit-error rate of a fresh block with fresh data.
    pub rber_fresh: f64,
    /// What wear adds to the raw bit-error rate at the P/E limit; below it, that times
    /// (erase count ÷ limit) ^ `wear_exponent`.
    pub rber_wear: f64,
    pub wear_exponent: f64,
    /// What one year of data age adds to the raw bit-error rate of a fresh block; a worn block
    /// leaks faster, by a factor (1 + erase count ÷ limit).
    pub rber_per_retention_year: f64,
    /// How old the data is when it is read, in days: a run of seconds adds no measurable
    /// retention loss, so the age of the data is a parameter of the experiment.
    pub data_age_days: f64,
    /// Bytes of data per ECC codeword.
    pub ecc_codeword_bytes: u32,
    /// Bit errors the ECC corrects per codeword.
    pub ecc_correctable_bits: u32,
    /// Read-retry steps after a failed decode; each senses the page again.
    pub read_retry_max: u32,
    /// Factor by which each retry step's re-tuned read voltages scale the bit-error rate.
    pub read_retry_rber_factor: f64,
}

impl Default for ReliabilityConfig {
    fn default() -> Self {
        ReliabilityConfig {
            pe_limit: None,
            factory_bad_block_rate: 0.0,
            rber_fresh: 1e-8,
            rber_wear: 1e-4,
            wear_exponent: 2.0,
            rber_per_retention_year: 1e-4,
            data_age_days: 0.0,
            ecc_codeword_bytes: 1024,
            ecc_correctable_bits: 40,
            read_retry_max: 8,
            read_retry_rber_factor: 0.5,
        }
    }
}

impl CellType {
    /// Rated program/erase cycles (see this module's sources).
    pub fn rated_pe_cycles(self) -> u32 {
        match self {
            CellType::Slc => 100_000,
            CellType::Mlc => 3_000,
            CellType::Tlc => 1_000,
            CellType::Qlc => 300,
        }
    }
}

impl ReliabilityConfig {
    pub fn pe_limit_for(&self, cell: CellType) -> u32 {
        self.pe_limit.unwrap_or_else(|| cell.rated_pe_cycles())
    }
}
