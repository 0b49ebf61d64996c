//! Data structures returned by Identify and Get Log Page, built byte by byte at their spec
//! offsets, and decoded back into named fields (the names nvme-cli uses in its JSON output).

/// A decoded field value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(u128),
    Str(String),
    /// A list of records (e.g. the LBA formats).
    List(Vec<Vec<(&'static str, Value)>>),
}

pub type Fields = Vec<(&'static str, Value)>;

fn le(b: &[u8], off: usize, n: usize) -> u128 {
    let mut v = 0u128;
    for i in (0..n).rev() {
        v = (v << 8) | b.get(off + i).copied().unwrap_or(0) as u128;
    }
    v
}

fn ascii(b: &[u8], off: usize, n: usize) -> String {
    let end = (off + n).min(b.len());
    let s: String = b
        .get(off..end)
        .unwrap_or(&[])
        .iter()
        .map(|&c| {
            if (0x20..0x7F).contains(&c) {
                c as char
            } else {
                ' '
            }
        })
        .collect();
    s.trim_end().to_string()
}

pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u128(b: &mut [u8], off: usize, v: u128) {
    b[off..off + 16].copy_from_slice(&v.to_le_bytes());
}
/// ASCII, space padded (§1.5 "ASCII string" fields are left-justified and padded with spaces).
pub fn put_str(b: &mut [u8], off: usize, n: usize, s: &str) {
    let f = &mut b[off..off + n];
    f.fill(b' ');
    for (d, c) in f.iter_mut().zip(s.bytes()) {
        *d = if (0x20..0x7F).contains(&c) { c } else { b'?' };
    }
}

/// Identify Controller offsets (§5.15.2.2, Figure 247).
pub mod ctrl_off {
    pub const VID: usize = 0;
    pub const SSVID: usize = 2;
    pub const SN: usize = 4;
    pub const MN: usize = 24;
    pub const FR: usize = 64;
    pub const RAB: usize = 72;
    pub const IEEE: usize = 73;
    pub const CMIC: usize = 76;
    pub const MDTS: usize = 77;
    pub const CNTLID: usize = 78;
    pub const VER: usize = 80;
    pub const RTD3R: usize = 84;
    pub const RTD3E: usize = 88;
    pub const OAES: usize = 92;
    pub const CTRATT: usize = 96;
    pub const RRLS: usize = 100;
    pub const CNTRLTYPE: usize = 111;
    pub const FGUID: usize = 112;
    pub const CRDT1: usize = 128;
    pub const CRDT2: usize = 130;
    pub const CRDT3: usize = 132;
    pub const NVMSR: usize = 253;
    pub const VWCI: usize = 254;
    pub const MEC: usize = 255;
    pub const OACS: usize = 256;
    pub const ACL: usize = 258;
    pub const AERL: usize = 259;
    pub const FRMW: usize = 260;
    pub const LPA: usize = 261;
    pub const ELPE: usize = 262;
    pub const NPSS: usize = 263;
    pub const AVSCC: usize = 264;
    pub const APSTA: usize = 265;
    pub const WCTEMP: usize = 266;
    pub const CCTEMP: usize = 268;
    pub const MTFA: usize = 270;
    pub const HMPRE: usize = 272;
    pub const HMMIN: usize = 276;
    pub const TNVMCAP: usize = 280;
    pub const UNVMCAP: usize = 296;
    pub const RPMBS: usize = 312;
    pub const EDSTT: usize = 316;
    pub const DSTO: usize = 318;
    pub const FWUG: usize = 319;
    pub const KAS: usize = 320;
    pub const HCTMA: usize = 322;
    pub const MNTMT: usize = 324;
    pub const MXTMT: usize = 326;
    pub const SANICAP: usize = 328;
    pub const HMMINDS: usize = 332;
    pub const HMMAXD: usize = 336;
    pub const NSETIDMAX: usize = 338;
    pub const ENDGIDMAX: usize = 340;
    pub const ANATT: usize = 342;
    pub const ANACAP: usize = 343;
    pub const ANAGRPMAX: usize = 344;
    pub const NANAGRPID: usize = 348;
    pub const PELS: usize = 352;
    pub const DOMAINID: usize = 356;
    pub const MEGCAP: usize = 368;
    pub const SQES: usize = 512;
    pub const CQES: usize = 513;
    pub const MAXCMD: usize = 514;
    pub const NN: usize = 516;
    pub const ONCS: usize = 520;
    pub const FUSES: usize = 522;
    pub const FNA: usize = 524;
    pub const VWC: usize = 525;
    pub const AWUN: usize = 526;
    pub const AWUPF: usize = 528;
    /// I/O Command Set Vendor Specific Command Configuration (NVMe 1.x's NVSCC).
    pub const ICSVSCC: usize = 530;
    pub const NWPC: usize = 531;
    pub const ACWU: usize = 532;
    pub const OCFS: usize = 534;
    pub const SGLS: usize = 536;
    pub const MNAN: usize = 540;
    pub const MAXDNA: usize = 544;
    pub const MAXCNA: usize = 560;
    pub const SUBNQN: usize = 768;
    /// NVMe over Fabrics attributes (0 on a PCIe controller).
    pub const IOCCSZ: usize = 1792;
    pub const IORCSZ: usize = 1796;
    pub const ICDOFF: usize = 1800;
    pub const FCATT: usize = 1802;
    pub const MSDBD: usize = 1803;
    pub const OFCS: usize = 1804;
    pub const PSD0: usize = 2048;
}

/// Identify Namespace offsets (NVM command set, §5.15.2.1, Figure 245).
pub mod ns_off {
    pub const NSZE: usize = 0;
    pub const NCAP: usize = 8;
    pub const NUSE: usize = 16;
    pub const NSFEAT: usize = 24;
    pub const NLBAF: usize = 25;
    pub const FLBAS: usize = 26;
    pub const MC: usize = 27;
    pub const DPC: usize = 28;
    pub const DPS: usize = 29;
    pub const NMIC: usize = 30;
    pub const RESCAP: usize = 31;
    pub const FPI: usize = 32;
    pub const DLFEAT: usize = 33;
    pub const NAWUN: usize = 34;
    pub const NAWUPF: usize = 36;
    pub const NACWU: usize = 38;
    pub const NABSN: usize = 40;
    pub const NABO: usize = 42;
    pub const NABSPF: usize = 44;
    pub const NOIOB: usize = 46;
    pub const NVMCAP: usize = 48;
    pub const NGUID: usize = 104;
    pub const EUI64: usize = 120;
    pub const LBAF0: usize = 128;
}

/// SMART / Health Information log offsets (§5.14.1.2, Figure 196).
pub mod smart_off {
    pub const CRITICAL_WARNING: usize = 0;
    pub const TEMPERATURE: usize = 1;
    pub const AVAIL_SPARE: usize = 3;
    pub const SPARE_THRESH: usize = 4;
    pub const PERCENT_USED: usize = 5;
    pub const ENDURANCE_GRP_CW: usize = 6;
    pub const DATA_UNITS_READ: usize = 32;
    pub const DATA_UNITS_WRITTEN: usize = 48;
    pub const HOST_READ_COMMANDS: usize = 64;
    pub const HOST_WRITE_COMMANDS: usize = 80;
    pub const CONTROLLER_BUSY_TIME: usize = 96;
    pub const POWER_CYCLES: usize = 112;
    pub const POWER_ON_HOURS: usize = 128;
    pub const UNSAFE_SHUTDOWNS: usize = 144;
    pub const MEDIA_ERRORS: usize = 160;
    pub const NUM_ERR_LOG_ENTRIES: usize = 176;
    pub const WARNING_TEMP_TIME: usize = 192;
    pub const CRITICAL_COMP_TIME: usize = 196;
    pub const TEMP_SENSOR_1: usize = 200;
}

/// A 16-byte identifier as nvme-cli prints a UUID: bytes in order, hex, dashed 8-4-4-4-12.
fn uuid(b: &[u8], off: usize) -> String {
    let mut s = String::with_capacity(36);
    for k in 0..16 {
        if matches!(k, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{:02x}", b.get(off + k).copied().unwrap_or(0)));
    }
    s
}

/// Identify Controller decoded with nvme-cli's `id-ctrl` JSON keys, in its order (nvme-cli
/// 2.x, as Debian ships it: every field it prints; `subnqn` only when not empty, as there).
pub fn decode_id_ctrl(b: &[u8]) -> Fields {
    use ctrl_off::*;
    let i = |off, n| Value::Int(le(b, off, n));
    // Power state descriptor 0 (Figure 276); the scales are bits 7:6 of their bytes.
    let ps = vec![
        ("max_power", Value::Int(le(b, PSD0, 2))),
        ("flags", Value::Int(le(b, PSD0 + 3, 1))),
        ("entry_lat", Value::Int(le(b, PSD0 + 4, 4))),
        ("exit_lat", Value::Int(le(b, PSD0 + 8, 4))),
        ("read_tput", Value::Int(le(b, PSD0 + 12, 1) & 0x1F)),
        ("read_lat", Value::Int(le(b, PSD0 + 13, 1) & 0x1F)),
        ("write_tput", Value::Int(le(b, PSD0 + 14, 1) & 0x1F)),
        ("write_lat", Value::Int(le(b, PSD0 + 15, 1) & 0x1F)),
        ("idle_power", Value::Int(le(b, PSD0 + 16, 2))),
        ("idle_scale", Value::Int(le(b, PSD0 + 18, 1) >> 6)),
        ("active_power", Value::Int(le(b, PSD0 + 20, 2))),
        ("active_power_work", Value::Int(le(b, PSD0 + 22, 1) & 0x7)),
        ("active_scale", Value::Int(le(b, PSD0 + 22, 1) >> 6)),
    ];
    let mut fields = vec![
        ("vid", i(VID, 2)),
        ("ssvid", i(SSVID, 2)),
        ("sn", Value::Str(ascii(b, SN, 20))),
        ("mn", Value::Str(ascii(b, MN, 40))),
        ("fr", Value::Str(ascii(b, FR, 8))),
        ("rab", i(RAB, 1)),
        // nvme-cli prints the IEEE OUI as one number, most significant byte last in memory.
        ("ieee", i(IEEE, 3)),
        ("cmic", i(CMIC, 1)),
        ("mdts", i(MDTS, 1)),
        ("cntlid", i(CNTLID, 2)),
        ("ver", i(VER, 4)),
        ("rtd3r", i(RTD3R, 4)),
        ("rtd3e", i(RTD3E, 4)),
        ("oaes", i(OAES, 4)),
        ("ctratt", i(CTRATT, 4)),
        ("rrls", i(RRLS, 2)),
        ("cntrltype", i(CNTRLTYPE, 1)),
        ("fguid", Value::Str(uuid(b, FGUID))),
        ("crdt1", i(CRDT1, 2)),
        ("crdt2", i(CRDT2, 2)),
        ("crdt3", i(CRDT3, 2)),
        ("nvmsr", i(NVMSR, 1)),
        ("vwci", i(VWCI, 1)),
        ("mec", i(MEC, 1)),
        ("oacs", i(OACS, 2)),
        ("acl", i(ACL, 1)),
        ("aerl", i(AERL, 1)),
        ("frmw", i(FRMW, 1)),
        ("lpa", i(LPA, 1)),
        ("elpe", i(ELPE, 1)),
        ("npss", i(NPSS, 1)),
        ("avscc", i(AVSCC, 1)),
        ("apsta", i(APSTA, 1)),
        ("wctemp", i(WCTEMP, 2)),
        ("cctemp", i(CCTEMP, 2)),
        ("mtfa", i(MTFA, 2)),
        ("hmpre", i(HMPRE, 4)),
        ("hmmin", i(HMMIN, 4)),
        ("tnvmcap", i(TNVMCAP, 16)),
        ("unvmcap", i(UNVMCAP, 16)),
        ("rpmbs", i(RPMBS, 4)),
        ("edstt", i(EDSTT, 2)),
        ("dsto", i(DSTO, 1)),
        ("fwug", i(FWUG, 1)),
        ("kas", i(KAS, 2)),
        ("hctma", i(HCTMA, 2)),
        ("mntmt", i(MNTMT, 2)),
        ("mxtmt", i(MXTMT, 2)),
        ("sanicap", i(SANICAP, 4)),
        ("hmminds", i(HMMINDS, 4)),
        ("hmmaxd", i(HMMAXD, 2)),
        ("nsetidmax", i(NSETIDMAX, 2)),
        ("endgidmax", i(ENDGIDMAX, 2)),
        ("anatt", i(ANATT, 1)),
        ("anacap", i(ANACAP, 1)),
        ("anagrpmax", i(ANAGRPMAX, 4)),
        ("nanagrpid", i(NANAGRPID, 4)),
        ("pels", i(PELS, 4)),
        ("domainid", i(DOMAINID, 2)),
        ("megcap", i(MEGCAP, 16)),
        ("sqes", i(SQES, 1)),
        ("cqes", i(CQES, 1)),
        ("maxcmd", i(MAXCMD, 2)),
        ("nn", i(NN, 4)),
        ("oncs", i(ONCS, 2)),
        ("fuses", i(FUSES, 2)),
        ("fna", i(FNA, 1)),
        ("vwc", i(VWC, 1)),
        ("awun", i(AWUN, 2)),
        ("awupf", i(AWUPF, 2)),
        ("icsvscc", i(ICSVSCC, 1)),
        ("nwpc", i(NWPC, 1)),
        ("acwu", i(ACWU, 2)),
        ("ocfs", i(OCFS, 2)),
        ("sgls", i(SGLS, 4)),
        ("mnan", i(MNAN, 4)),
        ("maxdna", i(MAXDNA, 16)),
        ("maxcna", i(MAXCNA, 4)),
    ];
    let subnqn = ascii(b, SUBNQN, 256);
    if !subnqn.is_empty() {
        fields.push(("subnqn", Value::Str(subnqn)));
    }
    fields.extend([
        ("ioccsz", i(IOCCSZ, 4)),
        ("iorcsz", i(IORCSZ, 4)),
        ("icdoff", i(ICDOFF, 2)),
        ("fcatt", i(FCATT, 1)),
        ("msdbd", i(MSDBD, 1)),
        ("ofcs", i(OFCS, 2)),
        ("psds", Value::List(vec![ps])),
    ]);
    fields
}

/// Identify Namespace decoded with nvme-cli's `id-ns` JSON keys.
pub fn decode_id_ns(b: &[u8]) -> Fields {
    use ns_off::*;
    let i = |off, n| Value::Int(le(b, off, n));
    let nlbaf = le(b, NLBAF, 1) as usize;
    let lbafs = (0..=nlbaf.min(15))
        .map(|k| {
            let v = le(b, LBAF0 + 4 * k, 4) as u32;
            vec![
                ("ms", Value::Int((v & 0xFFFF) as u128)),
                ("ds", Value::Int(((v >> 16) & 0xFF) as u128)),
                ("rp", Value::Int(((v >> 24) & 3) as u128)),
            ]
        })
        .collect();
    vec![
        ("nsze", i(NSZE, 8)),
        ("ncap", i(NCAP, 8)),
        ("nuse", i(NUSE, 8)),
        ("nsfeat", i(NSFEAT, 1)),
        ("nlbaf", i(NLBAF, 1)),
        ("flbas", i(FLBAS, 1)),
        ("mc", i(MC, 1)),
        ("dpc", i(DPC, 1)),
        ("dps", i(DPS, 1)),
        ("nmic", i(NMIC, 1)),
        ("rescap", i(RESCAP, 1)),
        ("fpi", i(FPI, 1)),
        ("dlfeat", i(DLFEAT, 1)),
        ("nawun", i(NAWUN, 2)),
        ("nawupf", i(NAWUPF, 2)),
        ("nacwu", i(NACWU, 2)),
        ("nabsn", i(NABSN, 2)),
        ("nabo", i(NABO, 2)),
        ("nabspf", i(NABSPF, 2)),
        ("noiob", i(NOIOB, 2)),
        ("nvmcap", i(NVMCAP, 16)),
        ("nguid", Value::Str(hex(b, NGUID, 16))),
        ("eui64", Value::Str(hex(b, EUI64, 8))),
        ("lbafs", Value::List(lbafs)),
    ]
}

/// The ZNS Identify Namespace (CNS 05h, CSI 02h) decoded with nvme-cli's `zns id-ns` JSON
/// keys, in its order; `lbafe` has one entry per LBA format of the NVM Identify Namespace
/// `nlbaf` counts (0's based), as nvme-cli prints them.
pub fn decode_zns_id_ns(b: &[u8], nlbaf: usize) -> Fields {
    let i = |off, n| Value::Int(le(b, off, n));
    let lbafe = (0..=nlbaf.min(15))
        .map(|k| {
            vec![
                ("zsze", Value::Int(le(b, 2816 + 16 * k, 8))),
                ("zdes", Value::Int(le(b, 2824 + 16 * k, 1))),
            ]
        })
        .collect();
    vec![
        ("zoc", i(0, 2)),
        ("ozcs", i(2, 2)),
        ("mar", i(4, 4)),
        ("mor", i(8, 4)),
        ("rrl", i(12, 4)),
        ("frl", i(16, 4)),
        ("rrl1", i(20, 4)),
        ("rrl2", i(24, 4)),
        ("rrl3", i(28, 4)),
        ("frl1", i(32, 4)),
        ("frl2", i(36, 4)),
        ("frl3", i(40, 4)),
        ("numzrwa", i(44, 4)),
        ("zrwafg", i(48, 2)),
        ("zrwasz", i(50, 2)),
        ("zrwacap", i(52, 1)),
        ("lbafe", Value::List(lbafe)),
    ]
}

/// The ZNS Identify Controller (CNS 06h, CSI 02h) as nvme-cli's `zns id-ctrl` JSON.
pub fn decode_zns_id_ctrl(b: &[u8]) -> Fields {
    vec![("zasl", Value::Int(le(b, 0, 1)))]
}

/// A Report Zones answer (a 64-byte header, then 64-byte zone descriptors) decoded as
/// nvme-cli's `zns report-zones` JSON: `nr_zones` and `zone_list` with `slba`, `wp`, `cap`,
/// `state` and `type` as nvme-cli names them, `attrs` and `attrs_info`. Only the descriptors
/// the buffer holds and the header counts are decoded.
pub fn decode_report_zones(b: &[u8]) -> Fields {
    let nr = le(b, 0, 8);
    let held = (b.len().saturating_sub(64) / 64) as u128;
    let zones = (0..nr.min(held) as usize)
        .map(|k| {
            let at = 64 + 64 * k;
            let state = match b[at + 1] >> 4 {
                0x1 => "EMPTY",
                0x2 => "IMP_OPENED",
                0x3 => "EXP_OPENED",
                0x4 => "CLOSED",
                0xd => "READONLY",
                0xe => "FULL",
                0xf => "OFFLINE",
                _ => "Unknown State",
            };
            let kind = if b[at] & 0xF == 0x2 {
                "SEQWRITE_REQ"
            } else {
                "Unknown"
            };
            vec![
                ("slba", Value::Int(le(b, at + 16, 8))),
                ("wp", Value::Int(le(b, at + 24, 8))),
                ("cap", Value::Int(le(b, at + 8, 8))),
                ("state", Value::Str(state.into())),
                ("type", Value::Str(kind.into())),
                ("attrs", Value::Int(b[at + 2] as u128)),
                ("attrs_info", Value::Int(b[at + 3] as u128)),
            ]
        })
        .collect();
    vec![
        ("nr_zones", Value::Int(nr)),
        ("zone_list", Value::List(zones)),
    ]
}

fn hex(b: &[u8], off: usize, n: usize) -> String {
    (off..off + n)
        .map(|k| format!("{:02x}", b.get(k).copied().unwrap_or(0)))
        .collect()
}

/// SMART / Health log decoded with nvme-cli's `smart-log` JSON keys.
pub fn decode_smart(b: &[u8]) -> Fields {
    use smart_off::*;
    let i = |off, n| Value::Int(le(b, off, n));
    vec![
        ("critical_warning", i(CRITICAL_WARNING, 1)),
        // Kelvin, as nvme-cli's JSON has it.
        ("temperature", i(TEMPERATURE, 2)),
        ("avail_spare", i(AVAIL_SPARE, 1)),
        ("spare_thresh", i(SPARE_THRESH, 1)),
        ("percent_used", i(PERCENT_USED, 1)),
        (
            "endurance_grp_critical_warning_summary",
            i(ENDURANCE_GRP_CW, 1),
        ),
        ("data_units_read", i(DATA_UNITS_READ, 16)),
        ("data_units_written", i(DATA_UNITS_WRITTEN, 16)),
        ("host_read_commands", i(HOST_READ_COMMANDS, 16)),
        ("host_write_commands", i(HOST_WRITE_COMMANDS, 16)),
        ("controller_busy_time", i(CONTROLLER_BUSY_TIME, 16)),
        ("power_cycles", i(POWER_CYCLES, 16)),
        ("power_on_hours", i(POWER_ON_HOURS, 16)),
        ("unsafe_shutdowns", i(UNSAFE_SHUTDOWNS, 16)),
        ("media_errors", i(MEDIA_ERRORS, 16)),
        ("num_err_log_entries", i(NUM_ERR_LOG_ENTRIES, 16)),
        ("warning_temp_time", i(WARNING_TEMP_TIME, 4)),
        ("critical_comp_time", i(CRITICAL_COMP_TIME, 4)),
        ("temperature_sensor_1", i(TEMP_SENSOR_1, 2)),
    ]
}

/// FDP Configurations log page (20h) decoded with nvme-cli's `fdp configs` JSON keys (`n`
/// zero-based; each configuration's `fdpa`, `vss`, `nrg`, `nruh`, `nnss`, `runs`, `erutl`, and
/// its handles' `ruht` under `ruhs`).
pub fn decode_fdp_configs(b: &[u8]) -> Fields {
    let i = |off, n| Value::Int(le(b, off, n));
    let n = le(b, 0, 2) as usize;
    let mut configs = Vec::new();
    let mut at = 16usize;
    for _ in 0..=n.min(15) {
        let size = le(b, at, 2) as usize;
        let nruh = le(b, at + 8, 2) as usize;
        let ruhs = (0..nruh)
            .map(|h| vec![("ruht", Value::Int(le(b, at + 64 + 4 * h, 1)))])
            .collect();
        configs.push(vec![
            ("fdpa", i(at + 2, 1)),
            ("vss", i(at + 3, 1)),
            ("nrg", i(at + 4, 4)),
            ("nruh", i(at + 8, 2)),
            ("nnss", i(at + 12, 4)),
            ("runs", i(at + 16, 8)),
            ("erutl", i(at + 24, 4)),
            ("ruhs", Value::List(ruhs)),
        ]);
        if size == 0 {
            break;
        }
        at += size;
    }
    vec![("n", i(0, 2)), ("configs", Value::List(configs))]
}

/// Reclaim Unit Handle Usage log page (21h) with nvme-cli's `fdp usage` JSON keys.
pub fn decode_fdp_usage(b: &[u8]) -> Fields {
    let nruh = le(b, 0, 2) as usize;
    let ruhus = (0..nruh)
        .map(|h| vec![("ruha", Value::Int(le(b, 8 + 8 * h, 1)))])
        .collect();
    vec![
        ("nruh", Value::Int(nruh as u128)),
        ("ruhus", Value::List(ruhus)),
    ]
}

/// FDP Statistics log page (22h) with nvme-cli's `fdp stats` JSON keys.
pub fn decode_fdp_stats(b: &[u8]) -> Fields {
    let i = |off, n| Value::Int(le(b, off, n));
    vec![("hbmw", i(0, 16)), ("mbmw", i(16, 16)), ("mbe", i(32, 16))]
}

/// FDP Events log page (23h) with nvme-cli's `fdp events` JSON keys.
pub fn decode_fdp_events(b: &[u8]) -> Fields {
    let n = (le(b, 0, 4) as usize).min(63);
    let events = (0..n)
        .map(|k| {
            let at = 64 + 64 * k;
            let i = |off, len| Value::Int(le(b, at + off, len));
            vec![
                ("type", i(0, 1)),
                ("fdpef", i(1, 1)),
                ("pid", i(2, 2)),
                ("timestamp", i(4, 8)),
                ("nsid", i(12, 4)),
            ]
        })
        .collect();
    vec![
        ("n", Value::Int(n as u128)),
        ("events", Value::List(events)),
    ]
}

/// Values as JSON text (keys in the order given; integers as JSON numbers).
pub fn to_json(fields: &Fields) -> String {
    fn val(v: &Value) -> String {
        match v {
            Value::Int(n) => n.to_string(),
            Value::Str(s) => serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(obj).collect();
                format!("[{}]", parts.join(","))
            }
        }
    }
    fn obj(f: &Fields) -> String {
        let parts: Vec<String> = f
            .iter()
            .map(|(k, v)| format!("\"{k}\":{}", val(v)))
            .collect();
        format!("{{{}}}", parts.join(","))
    }
    obj(fields)
}
