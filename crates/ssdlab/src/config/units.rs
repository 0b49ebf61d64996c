//! Quantities with units: sizes, durations and transfer rates, written as strings in configs.
//!
//! A duration without a unit is refused: "50" could be ns or µs, and guessing is how simulators
//! end up off by a factor of a thousand.

use crate::error::{got, Problem};
use crate::sim::SimTime;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A size in bytes. Accepts `4096`, `"4KiB"`, `"16 KiB"`, `"1GB"` (decimal) and `"1GiB"` (binary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A span of simulated time. Accepts `"50us"`, `"3.5ms"`, `"1015.625ps"`, `"2s"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub SimTime);

/// A transfer rate in transfers per second. Accepts `"400MT/s"`, `"1.6GT/s"`, `"400MHz"` (taken
/// as one transfer per cycle: write `800MT/s` for a DDR bus clocked at 400 MHz).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|c| *c != '_').collect();
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, unit.trim()))
}

/// A value parser's problem as serde's error: a value against an expectation in serde's own
/// words (`invalid value: "4 bananas", expected a size ...`), which the config and job readers
/// turn back into the parts ([`crate::error::plain_words`]); a rule in words as it is.
pub(crate) fn de_error<E: de::Error>(p: Problem) -> E {
    match p {
        Problem::Got { value, expected } => {
            E::invalid_value(de::Unexpected::Other(&value), &expected.as_str())
        }
        other => E::custom(other),
    }
}

/// Read a value that its parser makes from a string (a name, a link, an order), the parser's
/// problem as [`de_error`] passes it: serde's `try_from = "String"` would take it as words.
pub(crate) fn deserialize_parsed<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: impl Fn(&str) -> Result<T, Problem>,
) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).map_err(de_error)
}

/// `s` (as the message shows it: quoted) where `expected` was expected.
fn bad(s: &str, expected: impl Into<String>) -> Problem {
    got(format!("{s:?}"), expected)
}

pub fn parse_bytes(s: &str) -> Result<u64, Problem> {
    let expected = "a size such as 4096, \"4KiB\", \"16KiB\", \"1GiB\" or \"1GB\"";
    let (v, unit) = split_number(s).ok_or_else(|| bad(s, expected))?;
    let mult: u64 = match unit {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "TiB" | "T" => 1 << 40,
        "PiB" | "P" => 1 << 50,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "PB" => 1_000_000_000_000_000,
        _ => return Err(bad(s, expected)),
    };
    let too_large = || bad(s, format!("at most the largest size, {} bytes", u64::MAX));
    // A whole number is taken exactly (a float has 53 bits: 2^53 + 1 bytes would change).
    let digits: String = s.trim()[..s.trim().len() - unit.len()]
        .trim()
        .chars()
        .filter(|c| *c != '_')
        .collect();
    if let Ok(whole) = digits.parse::<u64>() {
        return whole.checked_mul(mult).ok_or_else(too_large);
    }
    let bytes = v * mult as f64;
    // 2^64 itself does not fit; `u64::MAX as f64` rounds up to it.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(too_large());
    }
    if bytes.fract() != 0.0 {
        return Err(bad(s, "a whole number of bytes"));
    }
    Ok(bytes as u64)
}

pub fn parse_duration(s: &str) -> Result<SimTime, Problem> {
    let expected = "a duration with a unit such as \"50us\", \"3.5ms\", \"100ns\" or \"1s\"";
    let (v, unit) = split_number(s).ok_or_else(|| bad(s, expected))?;
    let ps_per: f64 = match unit {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        _ => return Err(bad(s, expected)),
    };
    let ps = (v * ps_per).round();
    if ps > u64::MAX as f64 {
        return Err(bad(s, "a duration of at most 2^64 ps (about 213 days)"));
    }
    Ok(SimTime(ps as u64))
}

pub fn parse_rate(s: &str) -> Result<f64, Problem> {
    let expected = "a rate such as \"400MT/s\", \"1.6GT/s\" or \"400MHz\"";
    let (v, unit) = split_number(s).ok_or_else(|| bad(s, expected))?;
    let mult = match unit {
        "T/s" | "Hz" => 1.0,
        "kT/s" | "kHz" => 1e3,
        "MT/s" | "MHz" => 1e6,
        "GT/s" | "GHz" => 1e9,
        _ => return Err(bad(s, expected)),
    };
    if v <= 0.0 {
        return Err(bad(s, "a rate above zero"));
    }
    Ok(v * mult)
}

/// Bytes per second: `"450MB/s"`, `"1.2GB/s"`, `"600MiB/s"` (decimal or binary prefixes).
pub fn parse_byte_rate(s: &str) -> Result<f64, Problem> {
    let expected = "a byte rate such as \"450MB/s\", \"1.2GB/s\" or \"600MiB/s\"";
    let (v, unit) = split_number(s).ok_or_else(|| bad(s, expected))?;
    let mult = match unit {
        "B/s" => 1.0,
        "kB/s" | "KB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        "KiB/s" => 1024.0,
        "MiB/s" => 1024.0 * 1024.0,
        "GiB/s" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad(s, expected)),
    };
    if v <= 0.0 || !v.is_finite() {
        return Err(bad(s, "a rate above zero"));
    }
    Ok(v * mult)
}

/// The shortest exact spelling of a byte count (used when a config is printed back).
pub fn format_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 5] = [
        ("PiB", 1 << 50),
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if b >= size && b.is_multiple_of(size) {
            return format!("{}{}", b / size, name);
        }
    }
    format!("{b}B")
}

/// The shortest exact spelling of a duration.
pub fn format_duration(t: SimTime) -> String {
    let ps = t.0;
    const UNITS: [(&str, u64); 4] = [
        ("s", 1_000_000_000_000),
        ("ms", 1_000_000_000),
        ("us", 1_000_000),
        ("ns", 1_000),
    ];
    if ps == 0 {
        return "0ns".into();
    }
    for (name, size) in UNITS {
        if ps.is_multiple_of(size) {
            return format!("{}{}", ps / size, name);
        }
    }
    format!("{ps}ps")
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as 4096 or \"4KiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
                u64::try_from(v)
                    .map(Bytes)
                    .map_err(|_| E::custom(format!("got {v}, expected a size of zero or more")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                parse_bytes(v).map(Bytes).map_err(de_error)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration with a unit, such as \"50us\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                if v == 0 {
                    Ok(Dur(SimTime::ZERO))
                } else {
                    Err(E::custom(format!(
                        "got {v} without a unit, expected a duration such as \"{v}us\""
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                match u64::try_from(v) {
                    Ok(u) => self.visit_u64(u),
                    Err(_) => Err(E::custom(format!(
                        "got {v}, expected a duration of zero or more with a unit"
                    ))),
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "got {v} without a unit, expected a duration such as \"{v}us\""
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                parse_duration(v).map(Dur).map_err(de_error)
            }
        }
        d.deserialize_any(V)
    }
}

/// A data rate in bytes per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ByteRate(pub f64);

impl Serialize for ByteRate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}MB/s", self.0 / 1e6))
    }
}

impl<'de> Deserialize<'de> for ByteRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_byte_rate(&s).map(ByteRate).map_err(de_error)
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mts = self.0 / 1e6;
        s.serialize_str(&format!("{mts}MT/s"))
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_rate(&s).map(Rate).map_err(de_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("16 KiB").unwrap(), 16384);
        assert_eq!(parse_bytes("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_bytes("512").unwrap(), 512);
        assert!(parse_bytes("4 bananas").is_err());
        assert!(parse_bytes("0.3B").is_err());
        // Exact for whole numbers beyond a float's 53 bits; refused, not saturated, past 2^64.
        assert_eq!(
            parse_bytes("9007199254740993").unwrap(),
            9_007_199_254_740_993
        );
        assert_eq!(parse_bytes("16383PiB").unwrap(), 16383 << 50);
        assert_eq!(
            parse_bytes("16384PiB").unwrap_err(),
            got(
                "\"16384PiB\"",
                "at most the largest size, 18446744073709551615 bytes"
            )
        );
        assert!(parse_bytes("18446744073709551616").is_err());
        assert!(parse_bytes("16384.5PiB").is_err());
        assert_eq!(parse_bytes("1_000 KiB").unwrap(), 1_024_000);
        assert_eq!(format_bytes(16384), "16KiB");
        assert_eq!(format_bytes(1000), "1000B");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("50us").unwrap(), SimTime(50_000_000));
        assert_eq!(parse_duration("3.5ms").unwrap(), SimTime(3_500_000_000));
        assert_eq!(parse_duration("1015.625ps").unwrap(), SimTime(1016));
        assert!(parse_duration("50").is_err());
        assert_eq!(format_duration(SimTime(3_500_000_000)), "3500us");
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("400MT/s").unwrap(), 400e6);
        assert!(parse_rate("fast").is_err());
    }
}
