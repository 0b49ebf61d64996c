//! `[power]`: the energy a NAND device draws, NAND parts and controller together. Absent: no
//! power figures in the result.
//!
//! The NAND draws its operating current for as long as a die's array senses, programs or
//! erases, a standby current otherwise, and an I/O current while its channel transfers; the
//! controller draws an idle power all along, a core power while its firmware runs, and an energy
//! per bit of data through its data path (ECC, buffer, host PHY); a DRAM cache buffer and a
//! fusion device's PCM add their own energy models' figures. Average power = energy over the
//! whole simulated time. docs/nand.md, "Power", has the long form.
//!
//! Sources of the defaults:
//! - VCC 3.3 V and VCCQ 1.8 V: the ONFI supply rails (ONFI 3.x: VCC 2.7–3.6 V, VCCQ 1.8 V for
//!   NV-DDR2);
//! - array read, program and erase currents 25 mA and standby 10 µA per die: the typical ICC1,
//!   ICC2, ICC3 and ISB of ONFI-era MLC datasheets (assumed typical: datasheets differ by part);
//! - I/O current 20 mA while a channel transfers: assumed (NV-DDR2 burst currents are of this
//!   order; datasheets give them per part and rate);
//! - controller idle 100 mW, 30 mW per busy core, 20 pJ per bit read and 10 pJ per bit written
//!   through the data path: assumed round figures for a mobile or client controller in a 28 nm
//!   class process (LDPC decoding costs more than encoding). No public source splits a
//!   controller's power this way: set them for the part you model.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PowerConfig {
    /// NAND core supply (V).
    pub nand_vcc_v: f64,
    /// NAND I/O supply (V).
    pub nand_vccq_v: f64,
    /// Current of one die while its array senses a page (mA, ICC1).
    pub nand_read_ma: f64,
    /// Current of one die while its array programs (mA, ICC2).
    pub nand_program_ma: f64,
    /// Current of one die while its array erases a block (mA, ICC3).
    pub nand_erase_ma: f64,
    /// Current of one die while its array is idle (µA, ISB).
    pub nand_standby_ua: f64,
    /// I/O current of a channel's dies while the channel transfers (mA, ICCQ).
    pub nand_io_ma: f64,
    /// Controller power whatever it does: clocks, leakage, PHYs (mW).
    pub controller_idle_mw: f64,
    /// Added power of a controller core while firmware runs on it (mW).
    pub controller_core_mw: f64,
    /// Controller data-path energy per bit read from the NAND: ECC decode, buffer, host PHY (pJ).
    pub read_pj_per_bit: f64,
    /// Controller data-path energy per bit programmed to the NAND: ECC encode, buffer, host PHY
    /// (pJ).
    pub write_pj_per_bit: f64,
}

impl Default for PowerConfig {
    fn default() -> Self {
        PowerConfig {
            nand_vcc_v: 3.3,
            nand_vccq_v: 1.8,
            nand_read_ma: 25.0,
            nand_program_ma: 25.0,
            nand_erase_ma: 25.0,
            nand_standby_ua: 10.0,
            nand_io_ma: 20.0,
            controller_idle_mw: 100.0,
            controller_core_mw: 30.0,
            read_pj_per_bit: 20.0,
            write_pj_per_bit: 10.0,
        }
    }
}

impl PowerConfig {
    /// Every field with its name and the most it may be: far above any real part, low enough
    /// that no product of them with a run's time can overflow.
    pub fn fields(&self) -> [(&'static str, f64, f64); 11] {
        [
            ("nand_vcc_v", self.nand_vcc_v, 20.0),
            ("nand_vccq_v", self.nand_vccq_v, 20.0),
            ("nand_read_ma", self.nand_read_ma, 10_000.0),
            ("nand_program_ma", self.nand_program_ma, 10_000.0),
            ("nand_erase_ma", self.nand_erase_ma, 10_000.0),
            ("nand_standby_ua", self.nand_standby_ua, 1e6),
            ("nand_io_ma", self.nand_io_ma, 10_000.0),
            ("controller_idle_mw", self.controller_idle_mw, 1e6),
            ("controller_core_mw", self.controller_core_mw, 1e6),
            ("read_pj_per_bit", self.read_pj_per_bit, 1e6),
            ("write_pj_per_bit", self.write_pj_per_bit, 1e6),
        ]
    }
}
