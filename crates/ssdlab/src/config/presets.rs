//! Presets: the TOML files in `configs/`, compiled into the library so a fresh install has them.

const PRESETS: &[(&str, &str)] = &[
    (
        "seed000-lpddr3-dramif",
        include_str!("../../../../configs/seed000-lpddr3-dramif.toml"),
    ),
    (
        "seed000-ufs20-galaxy-s6",
        include_str!("../../../../configs/seed000-ufs20-galaxy-s6.toml"),
    ),
    (
        "seed001-16g-mlc-dram-cache",
        include_str!("../../../../configs/seed001-16g-mlc-dram-cache.toml"),
    ),
    (
        "seed004-64ch-mlc",
        include_str!("../../../../configs/seed004-64ch-mlc.toml"),
    ),
    (
        "seed002-pcm",
        include_str!("../../../../configs/seed002-pcm.toml"),
    ),
    (
        "seed002-fusion",
        include_str!("../../../../configs/seed002-fusion.toml"),
    ),
    (
        "pcm-micron-p8p",
        include_str!("../../../../configs/pcm-micron-p8p.toml"),
    ),
    (
        "pcm-samsung-8gb",
        include_str!("../../../../configs/pcm-samsung-8gb.toml"),
    ),
    (
        "pcm-optane-class",
        include_str!("../../../../configs/pcm-optane-class.toml"),
    ),
    (
        "seed003-scm-133",
        include_str!("../../../../configs/seed003-scm-133.toml"),
    ),
    (
        "seed003-scm-400",
        include_str!("../../../../configs/seed003-scm-400.toml"),
    ),
    (
        "seed003-slc-bast",
        include_str!("../../../../configs/seed003-slc-bast.toml"),
    ),
    (
        "seed003-mlc-bast",
        include_str!("../../../../configs/seed003-mlc-bast.toml"),
    ),
    (
        "small-tlc",
        include_str!("../../../../configs/small-tlc.toml"),
    ),
    (
        "modern-tlc-pcie4",
        include_str!("../../../../configs/modern-tlc-pcie4.toml"),
    ),
    (
        "sata-tlc-870evo",
        include_str!("../../../../configs/sata-tlc-870evo.toml"),
    ),
    (
        "ufs31-tlc-512g",
        include_str!("../../../../configs/ufs31-tlc-512g.toml"),
    ),
    (
        "emmc51-tlc-64g",
        include_str!("../../../../configs/emmc51-tlc-64g.toml"),
    ),
    (
        "pcie4-tlc-980pro",
        include_str!("../../../../configs/pcie4-tlc-980pro.toml"),
    ),
    (
        "pcie5-tlc-t700",
        include_str!("../../../../configs/pcie5-tlc-t700.toml"),
    ),
    ("zns-tlc", include_str!("../../../../configs/zns-tlc.toml")),
    (
        "mqsim-default",
        include_str!("../../../../configs/mqsim-default.toml"),
    ),
];

pub fn preset_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    names.sort_unstable();
    names
}

pub fn preset_toml(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    #[test]
    fn every_preset_parses_and_names_its_source() {
        for name in preset_names() {
            let cfg = SsdConfig::from_toml_str(preset_toml(name).unwrap(), name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(cfg.meta.name, name);
            assert!(!cfg.meta.source.is_empty(), "{name} has no source");
        }
    }
}
