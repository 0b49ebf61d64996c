//! The energy of a run under `[power]` (config/power.rs has the model and its sources).

use crate::config::PowerConfig;
use serde::Serialize;

/// What a run did, as the power model needs it. Times are summed over the dies (array) or the
/// channels (I/O); everything covers the whole simulated time.
#[derive(Clone, Copy, Debug, Default)]
pub struct PowerInputs {
    pub seconds: f64,
    pub dies: u64,
    pub array_read_s: f64,
    pub array_program_s: f64,
    pub array_erase_s: f64,
    pub channel_busy_s: f64,
    pub controller_busy_s: f64,
    /// Bytes read from the NAND through the controller's data path (host reads and GC).
    pub bytes_read: u64,
    /// Bytes programmed to the NAND through it (every page programmed).
    pub bytes_written: u64,
    /// What the DRAM cache buffer drew (`cache.energy`'s model), if the device has one.
    pub cache_mj: Option<f64>,
    /// What the PCM's reads and writes drew (`pcm.energy`'s figures), if the device has PCM
    /// with figures.
    pub pcm_mj: Option<f64>,
}

/// Energy over the run and the average power of each part.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PowerResult {
    /// Everything the device drew over the simulated time.
    pub energy_mj: f64,
    /// That energy over the simulated time.
    pub average_mw: f64,
    /// The dies' arrays while they sense, program and erase.
    pub nand_array_mw: f64,
    /// The dies while their arrays are idle.
    pub nand_standby_mw: f64,
    /// The dies' I/O while their channels transfer.
    pub nand_io_mw: f64,
    /// The controller's idle power and its cores while firmware runs.
    pub controller_mw: f64,
    /// The controller's data path (ECC, buffer, host PHY) per bit read and written.
    pub data_path_mw: f64,
    /// The DRAM cache buffer (dynamic and leakage, `cache.energy`), if the device has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_mw: Option<f64>,
    /// The PCM's reads and writes (`pcm.energy`), if the device has PCM with energy figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcm_mw: Option<f64>,
}

/// The energy of `x` under `p`. Volts × milliamperes × seconds are millijoules; milliwatts ×
/// seconds too; picojoules are 1e-9 mJ.
pub fn power(p: &PowerConfig, x: &PowerInputs) -> PowerResult {
    let array_s = x.array_read_s + x.array_program_s + x.array_erase_s;
    let array_mj = p.nand_vcc_v
        * (p.nand_read_ma * x.array_read_s
            + p.nand_program_ma * x.array_program_s
            + p.nand_erase_ma * x.array_erase_s);
    let idle_die_s = (x.dies as f64 * x.seconds - array_s).max(0.0);
    let standby_mj = p.nand_vcc_v * p.nand_standby_ua / 1e3 * idle_die_s;
    let io_mj = p.nand_vccq_v * p.nand_io_ma * x.channel_busy_s;
    let controller_mj =
        p.controller_idle_mw * x.seconds + p.controller_core_mw * x.controller_busy_s;
    let data_path_mj = (x.bytes_read as f64 * 8.0 * p.read_pj_per_bit
        + x.bytes_written as f64 * 8.0 * p.write_pj_per_bit)
        * 1e-9;
    let energy_mj = array_mj
        + standby_mj
        + io_mj
        + controller_mj
        + data_path_mj
        + x.cache_mj.unwrap_or(0.0)
        + x.pcm_mj.unwrap_or(0.0);
    let mw = |mj: f64| if x.seconds > 0.0 { mj / x.seconds } else { 0.0 };
    PowerResult {
        energy_mj,
        average_mw: mw(energy_mj),
        nand_array_mw: mw(array_mj),
        nand_standby_mw: mw(standby_mj),
        nand_io_mw: mw(io_mj),
        controller_mw: mw(controller_mj),
        data_path_mw: mw(data_path_mj),
        cache_mw: x.cache_mj.map(mw),
        pcm_mw: x.pcm_mj.map(mw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One second of a die programming all the time on a channel busy a tenth of it, with one
    /// MB written: each part by hand from the datasheet-style figures.
    #[test]
    fn each_part_is_current_times_voltage_times_time() {
        let p = PowerConfig::default();
        let x = PowerInputs {
            seconds: 1.0,
            dies: 2,
            array_program_s: 1.0,
            channel_busy_s: 0.1,
            controller_busy_s: 0.5,
            bytes_written: 1_000_000,
            ..PowerInputs::default()
        };
        let r = power(&p, &x);
        assert!((r.nand_array_mw - 3.3 * 25.0).abs() < 1e-9);
        // The second die idles the whole second: 10 µA at 3.3 V.
        assert!((r.nand_standby_mw - 3.3 * 0.010).abs() < 1e-9);
        assert!((r.nand_io_mw - 1.8 * 20.0 * 0.1).abs() < 1e-9);
        assert!((r.controller_mw - (100.0 + 30.0 * 0.5)).abs() < 1e-9);
        assert!((r.data_path_mw - 8e6 * 10.0 * 1e-9).abs() < 1e-9);
        let sum = r.nand_array_mw + r.nand_standby_mw + r.nand_io_mw + r.controller_mw;
        assert!((r.average_mw - (sum + r.data_path_mw)).abs() < 1e-9);
        assert!((r.energy_mj - r.average_mw).abs() < 1e-9);
        // The cache buffer's and the PCM's energy join the sum when given.
        let with = power(
            &p,
            &PowerInputs {
                cache_mj: Some(2.0),
                pcm_mj: Some(0.5),
                ..x
            },
        );
        assert_eq!((with.cache_mw, with.pcm_mw), (Some(2.0), Some(0.5)));
        assert!((with.average_mw - (r.average_mw + 2.5)).abs() < 1e-9);
        assert_eq!((r.cache_mw, r.pcm_mw), (None, None));
        // No time, no power (and no division by zero).
        let none = power(&p, &PowerInputs::default());
        assert_eq!(none.average_mw, 0.0);
    }
}
