//! The config's JSON Schema, for editors (`ssdlab config schema`). Most of it is derived from
//! the config types and their doc comments; the values written as strings with a grammar of
//! their own (sizes, durations, rates, link names, the allocation order, the interface kind)
//! describe that grammar here.

use super::units::{ByteRate, Bytes, Dur, Rate};
use super::{AllocationOrder, InterfaceKind, Link, PrdBuffer, SsdConfig};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// A string value with a grammar: its description, a regular expression editors can check, and
/// examples.
fn string_schema(description: &str, pattern: &str, examples: &[&str]) -> Schema {
    json_schema!({
        "type": "string",
        "description": description,
        "pattern": pattern,
        "examples": examples,
    })
}

macro_rules! string_valued {
    ($t:ty, $name:literal, $desc:expr, $pattern:expr, [$($ex:literal),*]) => {
        impl JsonSchema for $t {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                string_schema($desc, $pattern, &[$($ex),*])
            }
        }
    };
}

string_valued!(
    Dur,
    "Duration",
    "A span of time with its unit: ps, ns, us (or µs), ms or s; 0 alone needs none",
    r"^\s*(0|[0-9_]+(\.[0-9_]*)?\s*(ps|ns|us|µs|ms|s))\s*$",
    ["50us", "3.5ms", "1015.625ps"]
);
string_valued!(
    Rate,
    "TransferRate",
    "Transfers per second: MT/s, GT/s, or MHz taken as one transfer per cycle",
    r"^\s*[0-9_]+(\.[0-9_]*)?\s*(T/s|kT/s|MT/s|GT/s|Hz|kHz|MHz|GHz)\s*$",
    ["800MT/s", "1.6GT/s"]
);
string_valued!(
    ByteRate,
    "ByteRate",
    "Bytes per second with a unit",
    r"^\s*[0-9_]+(\.[0-9_]*)?\s*(B/s|kB/s|KB/s|MB/s|GB/s|KiB/s|MiB/s|GiB/s)\s*$",
    ["450MB/s", "1GiB/s"]
);
string_valued!(
    Link,
    "LinkName",
    "The link of the interface kind: NVMe pcie<gen 1–5>x<lanes>; IDE udma0…udma6; SATA sata1…sata3; UFS hs-g<gear 1–4>[a|b]x<lanes 1–2>; eMMC hs52, ddr52, hs200, hs400; the DRAM interface lpddr<gen>-<MT/s>x<bits>; any kind: ideal",
    r"^(ideal|pcie[1-5]x(1|2|4|8|16)|udma[0-6]|sata[1-3]|hs-g[1-4][ab]?x[12]|hs52|ddr52|hs200|hs400|lpddr[0-9a-z]*-[0-9.]+x(16|32|64))$",
    ["pcie3x4", "sata3", "hs-g3x2", "hs400", "lpddr3-1200x32"]
);
string_valued!(
    AllocationOrder,
    "AllocationOrder",
    "The order consecutive allocations visit the planes, fastest-varying first: a permutation of C (channel), W (way), D (die), P (plane)",
    r"^(?!.*(.).*\1)[CWDP]{4}$",
    ["CWDP", "PDWC"]
);

string_valued!(
    PrdBuffer,
    "PrdBuffer",
    "Where a request's buffer starts against interface.ata.prd_boundary: random-page (a 4 KiB page drawn per request), run-page (one page drawn per run), aligned, or a size past the boundary",
    r"^\s*(random-page|run-page|aligned|[0-9_]+\s*(B|KiB|MiB)?)\s*$",
    ["random-page", "run-page", "aligned", "32KiB"]
);

impl JsonSchema for Bytes {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Size")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A size: a whole number of bytes, or a string with a unit (B, KB/MB/GB/TB decimal, KiB/MiB/GiB/TiB/PiB binary)",
            "oneOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": r"^\s*[0-9_]+(\.[0-9_]*)?\s*(B|K|k|KiB|M|MiB|G|GiB|T|TiB|P|PiB|KB|kB|MB|GB|TB|PB)?\s*$" }
            ],
            "examples": ["4KiB", "16 KiB", 4096],
        })
    }
}

impl JsonSchema for InterfaceKind {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("InterfaceKind")
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "The host interface protocol",
            "enum": ["nvme", "ide", "sata", "ufs", "emmc", "dram"],
        })
    }
}

/// The JSON Schema of a config file, pretty-printed.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(SsdConfig);
    serde_json::to_string_pretty(&schema).expect("a schema serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_section_and_the_typed_values() {
        let v: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
        let props = v["properties"].as_object().unwrap();
        for section in [
            "meta",
            "nand",
            "ftl",
            "controller",
            "interface",
            "host",
            "cache",
            "precondition",
        ] {
            assert!(props.contains_key(section), "no {section} in the schema");
        }
        let defs = v["$defs"].as_object().unwrap();
        for d in [
            "InterfaceConfig",
            "LinkName",
            "InterfaceKind",
            "Size",
            "Duration",
            "AllocationOrder",
        ] {
            assert!(defs.contains_key(d), "no {d} in $defs: {:?}", defs.keys());
        }
        // Unknown keys are refused, as the loader does.
        assert_eq!(defs["NandConfig"]["additionalProperties"], false);
        // Doc comments become descriptions.
        let mdts = &defs["InterfaceConfig"]["properties"]["mdts"];
        assert!(mdts["description"].as_str().is_some(), "{mdts}");
    }

    /// The patterns the schema gives editors accept what the loader accepts: every preset's
    /// link, durations and sizes, and refuse what it refuses.
    #[test]
    fn the_patterns_agree_with_the_loader() {
        let v: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
        let pat = |def: &str| {
            let d = &v["$defs"][def];
            let p = d["pattern"]
                .as_str()
                .or_else(|| d["oneOf"][1]["pattern"].as_str())
                .unwrap();
            regex::Regex::new(p).unwrap()
        };
        let link = pat("LinkName");
        for name in super::super::presets::preset_names() {
            let cfg = SsdConfig::resolve(name, &[]).unwrap();
            assert!(link.is_match(cfg.interface.link.text()), "{name}");
        }
        for good in [
            "ideal",
            "pcie5x16",
            "udma0",
            "sata1",
            "hs-g4ax1",
            "ddr52",
            "lpddr4x-4266x16",
        ] {
            assert!(link.is_match(good), "{good}");
            assert!(Link::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "pcie6x4", "pcie3x3", "udma7", "sata4", "hs-g5x2", "hs800", "usb",
        ] {
            assert!(!link.is_match(bad), "{bad}");
            assert!(Link::parse(bad).is_err(), "{bad}");
        }
        use super::super::units::{parse_byte_rate, parse_bytes, parse_duration, parse_rate};
        let agree = |def: &str, parse: &dyn Fn(&str) -> bool, samples: &[&str]| {
            let re = pat(def);
            for s in samples {
                assert_eq!(re.is_match(s), parse(s), "{def}: {s:?}");
            }
        };
        agree(
            "Duration",
            &|s| parse_duration(s).is_ok(),
            &[
                "50us",
                "3.5ms",
                "1015.625ps",
                "2s",
                "10 ns",
                "7µs",
                "50",
                "-1us",
                "5 minutes",
                "3h",
            ],
        );
        agree(
            "Size",
            &|s| parse_bytes(s).is_ok(),
            &[
                "4KiB",
                "16 KiB",
                "1GB",
                "512B",
                "1.5MiB",
                "4096",
                "4 kilobytes",
                "2EiB",
                "-4KiB",
            ],
        );
        agree(
            "TransferRate",
            &|s| parse_rate(s).is_ok(),
            &[
                "800MT/s", "1.6GT/s", "400MHz", "800 MT/s", "800Mbps", "fast",
            ],
        );
        agree(
            "ByteRate",
            &|s| parse_byte_rate(s).is_ok(),
            &[
                "450MB/s", "1.2GB/s", "600MiB/s", "450 MB/s", "450MBps", "1TB/s",
            ],
        );
    }
}
