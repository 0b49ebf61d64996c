//! `distribution`: where a job's random offsets fall (fio's `random_distribution`: zipf,
//! pareto, normal, `zoned` and `zoned_abs`), read and checked when the job is read.

use crate::config::units::parse_bytes;
use crate::error::{got, says, Error, Invalid, Problem, Result, JOB};
use serde::{Deserialize, Serialize};

/// `distribution`: where random offsets fall, parsed when the job is read. It serialises back
/// to the text as written.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "String")]
pub struct Distribution {
    text: String,
    zipf_theta: Option<f64>,
    zones: Option<Zones>,
    skew: Option<Skew>,
}

/// fio's pareto and normal distributions (lib/zipf.c `pareto_next`, lib/gauss.c `gauss_next`)
/// over the region's block slots, as ranks that the generator scatters over the region as it
/// scatters zipf's (fio hashes them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Skew {
    /// `pareto:h`, 0 < h < 1: rank (slots − 1) × u^(ln h / ln(1 − h)), u uniform in [0, 1):
    /// h of the accesses go to 1 − h of the blocks (0.8: 80 % to 20 %).
    Pareto { h: f64 },
    /// `normal:dev`, 0 ≤ dev < 100: the mean of 12 uniform ranks in [0, slots] (a bell
    /// around the middle, standard deviation about slots / 12), plus a uniform deviation of
    /// dev % of the slots (at most half of them) centred on 0, halved until it stays inside.
    Normal { dev: f64 },
}

/// fio's `zoned` and `zoned_abs` distributions: zones of the region in order from its start,
/// each with its share of the accesses (percent) and its length, a share of the region in
/// percent (`zoned`) or bytes (`zoned_abs`). Within a zone offsets are uniform.
#[derive(Clone, Debug, PartialEq)]
pub struct Zones {
    pub absolute: bool,
    /// (access percent, length: percent of the region or bytes)
    pub zones: Vec<(u32, u64)>,
}

impl Zones {
    fn parse(s: &str, absolute: bool) -> std::result::Result<Zones, Problem> {
        let form = if absolute {
            "\"zoned_abs:ACCESS%/SIZE:...\" such as \"zoned_abs:60/1GiB:40/3GiB\""
        } else {
            "\"zoned:ACCESS%/REGION%:...\" such as \"zoned:60/10:30/20:10/70\""
        };
        let bad = |why: String| got(format!("{s:?}"), format!("{form} ({why})"));
        let mut zones = Vec::new();
        let (mut access, mut share) = (0u64, 0u64);
        for part in s.split(':') {
            let (a, len) = part
                .split_once('/')
                .ok_or_else(|| bad(format!("zone {part:?} has no '/'")))?;
            let a: u32 = a
                .trim()
                .parse()
                .map_err(|_| bad(format!("access share {a:?} is not a whole percentage")))?;
            let len = if absolute {
                parse_bytes(len.trim()).map_err(|m| bad(format!("zone size: {m}")))?
            } else {
                len.trim()
                    .parse::<u64>()
                    .map_err(|_| bad(format!("region share {len:?} is not a whole percentage")))?
            };
            if len == 0 {
                return Err(bad(format!("zone {part:?} is empty")));
            }
            access += a as u64;
            share = share.saturating_add(len);
            zones.push((a, len));
        }
        // fio refuses both (checked against fio 3.33): accesses that do not add up to 100, and
        // zones that add up to more than the whole region.
        if access != 100 {
            return Err(bad(format!(
                "the access shares add up to {access}, not 100"
            )));
        }
        if !absolute && share > 100 {
            return Err(bad(format!(
                "the region shares add up to {share}, above 100"
            )));
        }
        Ok(Zones { absolute, zones })
    }
}

impl Distribution {
    pub fn parse(s: &str) -> std::result::Result<Distribution, Problem> {
        let expected = "\"uniform\", \"zipf:<theta>\" with theta > 0 (e.g. \"zipf:1.2\"), \"pareto:<h>\" with 0 < h < 1, \"normal:<dev>\" with 0 <= dev < 100, \"zoned:ACCESS%/REGION%:...\" or \"zoned_abs:ACCESS%/SIZE:...\"";
        let mut zipf_theta = None;
        let mut zones = None;
        let mut skew = None;
        if let Some(rest) = s.strip_prefix("pareto:") {
            // fio's ranges (options.c, str_random_distribution_cb).
            match rest.parse::<f64>() {
                Ok(h) if h > 0.0 && h < 1.0 => skew = Some(Skew::Pareto { h }),
                _ => return Err(got(format!("{s:?}"), expected)),
            }
        } else if let Some(rest) = s.strip_prefix("normal:") {
            match rest.parse::<f64>() {
                Ok(dev) if (0.0..100.0).contains(&dev) => skew = Some(Skew::Normal { dev }),
                _ => return Err(got(format!("{s:?}"), expected)),
            }
        } else if let Some(rest) = s.strip_prefix("zoned:") {
            zones = Some(Zones::parse(rest, false)?);
        } else if let Some(rest) = s.strip_prefix("zoned_abs:") {
            zones = Some(Zones::parse(rest, true)?);
        } else if s != "uniform" {
            match s.strip_prefix("zipf:").map(str::parse::<f64>) {
                Some(Ok(theta)) if theta > 0.0 && theta.is_finite() => zipf_theta = Some(theta),
                _ => return Err(got(format!("{s:?}"), expected)),
            }
        }
        Ok(Distribution {
            text: s.to_string(),
            zipf_theta,
            zones,
            skew,
        })
    }

    /// fio's pareto or normal distribution; None for the others.
    pub fn skew(&self) -> Option<Skew> {
        self.skew
    }

    /// The Zipf exponent; None for uniform.
    pub fn zipf_theta(&self) -> Option<f64> {
        self.zipf_theta
    }

    /// fio's zones; None unless `zoned` or `zoned_abs`.
    pub fn zones(&self) -> Option<&Zones> {
        self.zones.as_ref()
    }

    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Default for Distribution {
    fn default() -> Self {
        Distribution {
            text: "uniform".into(),
            zipf_theta: None,
            zones: None,
            skew: None,
        }
    }
}

/// Read by hand rather than `try_from = "String"`, whose error serde can only take as words:
/// a value and its expectation go through as serde's own "invalid value" (see
/// [`crate::config::units`]), so that the job's error has them as parts.
impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        crate::config::units::deserialize_parsed(d, Distribution::parse)
    }
}

impl From<Distribution> for String {
    fn from(d: Distribution) -> String {
        d.text
    }
}

/// fio's zones laid over the region `[start, start + len)`: each zone's start aligned down to the
/// block alignment `align`, each long enough for the largest request `max_bs`.
pub(super) fn fit_zones(
    z: &Zones,
    start: u64,
    len: u64,
    align: u64,
    max_bs: u64,
) -> Result<Vec<(u32, u64, u64)>> {
    let err = |p: Problem| Err(Error::bad_job(Invalid::new(JOB, "distribution", p)));
    let mut out = Vec::with_capacity(z.zones.len());
    let (mut at, mut access) = (0u64, 0u32);
    for &(share, size) in &z.zones {
        let bytes = if z.absolute {
            size
        } else {
            (len as u128 * size as u128 / 100) as u64
        };
        let end = at.saturating_add(bytes).min(len);
        if z.absolute && at.saturating_add(bytes) > len {
            return err(says(format!(
                "the zones reach {} bytes, past the job's region of {} bytes",
                at.saturating_add(bytes),
                len
            )));
        }
        let (zstart, zend) = (at / align * align, end / align * align);
        if zend.saturating_sub(zstart) < max_bs {
            return err(says(format!(
                "zone {} ({share}% of accesses) spans {} bytes of the region, less than a {max_bs}-byte request",
                out.len() + 1,
                zend.saturating_sub(zstart)
            )));
        }
        access += share;
        out.push((access, start + zstart, zend - zstart));
        at = end;
    }
    Ok(out)
}
