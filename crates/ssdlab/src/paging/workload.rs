//! The memory-access streams the paging model runs: a page-reference trace (one address per
//! line, an optional R or W after it) or the output of `valgrind --tool=lackey --trace-mem=yes`.
//! Addresses become dense page numbers in first-touch order, so the model's tables are
//! indexed directly; an access is packed as `page << 1 | write`.

use crate::error::{says, Invalid};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io::{BufReader, Read};

/// Page size of the workload's addresses (4 KiB).
const PAGE_SHIFT: u32 = 12;

/// The most accesses a workload holds: 8 GiB of them at 4 bytes each, as many page references
/// as the PC mix may generate. An endless input (`yes 0`) stops here instead of filling memory.
const MAX_ACCESSES: usize = 1 << 31;

/// The largest access a lackey line may claim: lackey reports each load or store as the
/// instruction made it (a few bytes, 64 for the widest vectors); far beyond that is not lackey's.
const MAX_LACKEY_BYTES: u64 = 64 * 1024;

#[derive(Clone, Debug, Default)]
pub struct Workload {
    /// `page << 1 | write`, in order.
    pub accesses: Vec<u32>,
    /// Distinct pages touched.
    pub pages: u32,
    /// Accesses read as instruction fetches (lackey `I`), counted as reads.
    pub instruction_fetches: u64,
    /// The access from which swap writes count towards wear (`wear.*`): those before it age
    /// the swap area (seed 003 aged its system for about 20 h before its 2-hour lifetime test).
    /// 0: every write counts.
    pub wear_from: usize,
}

impl Workload {
    /// A workload from dense (page, write) pairs.
    pub fn from_pages(pages: impl IntoIterator<Item = (u32, bool)>) -> Workload {
        let mut w = Workload::default();
        for (p, wr) in pages {
            w.pages = w.pages.max(p + 1);
            w.accesses.push(p << 1 | wr as u32);
        }
        w
    }

    /// The paging model's speed benchmark stream (`examples/paging_speed.rs`, docs/paging.md
    /// "Speed"): `n` accesses from a xorshift generator, 95 % to the first 50 K pages (hits
    /// once warm in 256 MiB), 5 % to any of 300 K (the swapping tail), one in two a write.
    pub fn speed_benchmark(n: usize) -> Workload {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        Workload::from_pages((0..n).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let hot = x % 100 < 95;
            let page = if hot {
                (x >> 20) % 50_000
            } else {
                (x >> 20) % 300_000
            };
            (page as u32, x & 8 == 0)
        }))
    }
}

/// Dense page numbers in first-touch order.
struct Pager {
    map: BTreeMap<u64, u32>,
    last: (u64, u32),
    out: Workload,
    max_accesses: usize,
}

impl Pager {
    fn new(max_accesses: usize) -> Pager {
        Pager {
            map: BTreeMap::new(),
            last: (u64::MAX, 0),
            out: Workload::default(),
            max_accesses,
        }
    }

    #[inline]
    fn touch(&mut self, vpn: u64, write: bool, origin: &str, line: u64) -> Result<()> {
        if self.out.accesses.len() >= self.max_accesses {
            return Err(Error::bad_trace(Invalid::unnamed(
                format!("{origin}, line {line}"),
                crate::error::got(
                    format!("more than {} memory accesses", self.max_accesses),
                    "a shorter trace (or one cut with head)",
                ),
            )));
        }
        let id = if self.last.0 == vpn {
            self.last.1
        } else {
            let n = self.map.len() as u32;
            if n >= (1 << 31) - 1 {
                return Err(Error::bad_trace(Invalid::unnamed(
                    format!("{origin}, line {line}"),
                    crate::error::got(
                        "more than 2^31 distinct pages",
                        "at most 2^31 - 1 (the model numbers pages in 31 bits)",
                    ),
                )));
            }
            let id = *self.map.entry(vpn).or_insert(n);
            self.last = (vpn, id);
            id
        };
        self.out.accesses.push(id << 1 | write as u32);
        Ok(())
    }

    fn finish(mut self) -> Workload {
        self.out.pages = self.map.len() as u32;
        self.out
    }
}

fn parse_addr(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
        s.parse().ok()
    } else {
        None
    }
}

/// Read a trace file: lackey output if its first access line looks like lackey's, else one
/// address per line.
pub fn read_file(path: &str) -> Result<Workload> {
    let f = std::fs::File::open(path).map_err(|e| unreadable(path, &e))?;
    read(BufReader::new(f), path)
}

/// `{path}: cannot read: {why}`: a trace file that cannot be opened.
pub(super) fn unreadable(path: &str, e: &std::io::Error) -> Error {
    Error::bad_trace(Invalid::unnamed(path, says(format!("cannot read: {e}"))))
}

/// Read a trace from `r`; `origin` names it in errors.
pub fn read(r: impl Read, origin: &str) -> Result<Workload> {
    read_limited(r, origin, MAX_ACCESSES)
}

/// [`read`], holding at most `max_accesses` accesses.
fn read_limited(r: impl Read, origin: &str, max_accesses: usize) -> Result<Workload> {
    use crate::workload::trace::input::{read_line, MAX_LINE};
    let mut p = Pager::new(max_accesses);
    let mut lackey: Option<bool> = None;
    let mut fetches = 0u64;
    let mut buf = Vec::new();
    let mut reader = BufReader::new(r);
    let mut n = 0u64;
    loop {
        let got = read_line(&mut reader, &mut buf).map_err(|e| {
            Error::bad_trace(Invalid::unnamed(
                format!("{origin}, line {}", n + 1),
                says(format!("cannot read: {e}")),
            ))
        })?;
        let Some(too_long) = got else {
            break;
        };
        n += 1;
        if too_long {
            return Err(Error::bad_trace(Invalid::unnamed(
                format!("{origin}, line {n}"),
                crate::error::got(
                    format!("a line longer than {MAX_LINE} bytes"),
                    "an address or a lackey line",
                ),
            )));
        }
        let l = std::str::from_utf8(&buf).map_err(|_| {
            Error::bad_trace(Invalid::unnamed(
                format!("{origin}, line {n}"),
                crate::error::got("bytes that are not text", "an address or a lackey line"),
            ))
        })?;
        let l = l.trim_end();
        if l.is_empty() || l.starts_with('#') || l.starts_with("==") || l.starts_with("--") {
            continue;
        }
        let is_lackey = *lackey.get_or_insert_with(|| {
            l.starts_with("I  ")
                || l.starts_with(" L ")
                || l.starts_with(" S ")
                || l.starts_with(" M ")
        });
        if is_lackey {
            let (kind, rest) = l.split_at(2.min(l.len()));
            let bad = || {
                Error::bad_trace(Invalid::unnamed(
                    format!("{origin}, line {n}"),
                    crate::error::got(format!("{l:?}"), "a lackey line such as \" L 04222cac,4\""),
                ))
            };
            let (addr, size) = rest.trim().split_once(',').ok_or_else(bad)?;
            let addr = u64::from_str_radix(addr.trim(), 16).map_err(|_| bad())?;
            let size: u64 = size.trim().parse().map_err(|_| bad())?;
            if size > MAX_LACKEY_BYTES {
                return Err(Error::bad_trace(Invalid::unnamed(format!("{origin}, line {n}"), crate::error::got(format!("an access of {size} bytes"), format!("at most {MAX_LACKEY_BYTES} (lackey reports each load or store, a few bytes)")))));
            }
            let last = addr.saturating_add(size.max(1) - 1);
            let (first_vpn, last_vpn) = (addr >> PAGE_SHIFT, last >> PAGE_SHIFT);
            let kinds: &[bool] = match kind.trim() {
                "I" => {
                    fetches += 1;
                    &[false]
                }
                "L" => &[false],
                "S" => &[true],
                // A modify is a load and a store of the same bytes.
                "M" => &[false, true],
                _ => return Err(bad()),
            };
            for &w in kinds {
                for vpn in first_vpn..=last_vpn {
                    p.touch(vpn, w, origin, n)?;
                }
            }
        } else {
            let mut it = l.split_whitespace();
            let a = it.next().unwrap_or("");
            let addr = parse_addr(a).ok_or_else(|| {
                Error::bad_trace(Invalid::unnamed(
                    format!("{origin}, line {n}"),
                    crate::error::got(
                        format!("{a:?}"),
                        "an address (decimal or 0x hex), optionally followed by R or W",
                    ),
                ))
            })?;
            let write = match it.next() {
                None | Some("R") | Some("r") => false,
                Some("W") | Some("w") => true,
                Some(o) => {
                    return Err(Error::bad_trace(Invalid::unnamed(
                        format!("{origin}, line {n}"),
                        crate::error::got(format!("{o:?} after the address"), "R or W"),
                    )))
                }
            };
            if let Some(extra) = it.next() {
                return Err(Error::bad_trace(Invalid::unnamed(
                    format!("{origin}, line {n}"),
                    crate::error::got(
                        format!("{extra:?} after the address and its R or W"),
                        "nothing more (one access a line)",
                    ),
                )));
            }
            p.touch(addr >> PAGE_SHIFT, write, origin, n)?;
        }
    }
    let mut w = p.finish();
    w.instruction_fetches = fetches;
    if w.accesses.is_empty() {
        return Err(Error::bad_trace(Invalid::unnamed(
            origin,
            says("no memory accesses found"),
        )));
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_addresses_become_dense_pages_in_first_touch_order() {
        let w = read("0x5000 W\n4096\n# c\n0x5fff R\n8192 w\n".as_bytes(), "t").unwrap();
        assert_eq!(w.accesses, vec![1, 2, 0, 5]);
        assert_eq!(w.pages, 3);
    }

    #[test]
    fn lackey_lines_and_page_crossing_accesses() {
        let text = "==123== Lackey\nI  04000000,3\n L 1ffefffffc,8\n S 00001000,4\n M 00001ffe,4\n";
        let w = read(text.as_bytes(), "t").unwrap();
        // I page 0x4000; L crosses 0x1ffeffffc..0x1fff00003: two pages; S 0x1; M 0x1 and 0x2,
        // as a read of both then a write of both.
        assert_eq!(
            w.accesses,
            vec![
                0,
                1 << 1,
                2 << 1,
                3 << 1 | 1,
                3 << 1,
                4 << 1,
                3 << 1 | 1,
                4 << 1 | 1
            ]
        );
        assert_eq!(w.instruction_fetches, 1);
    }

    #[test]
    fn a_third_field_on_a_page_reference_line_is_refused() {
        // It was dropped without a word (issue 45, defect 7).
        let e = read("0x1000 W\n0x2000 R 17\n".as_bytes(), "t.txt")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("t.txt, line 2") && e.contains("\"17\""), "{e}");
    }

    #[test]
    fn bad_input_is_one_line_naming_the_line() {
        let e = read("0x10\nzebra\n".as_bytes(), "t.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.txt, line 2") && e.contains("zebra"), "{e}");
        let e = read(" L 1000,4\n L xyz\n".as_bytes(), "l")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = read_file("/nonexistent/lackey.out")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/lackey.out: cannot read"), "{e}");
        assert!(read("".as_bytes(), "e").is_err());
    }

    #[test]
    fn an_endless_or_outsized_input_is_refused_not_read_into_memory() {
        // A line with no end (a device of zeros): refused at the line's limit.
        let zeros = std::io::repeat(0).take(1 << 20);
        let e = read(zeros, "/dev/zero").unwrap_err().to_string();
        assert!(
            e.contains("/dev/zero, line 1") && e.contains("longer than 65536 bytes"),
            "{e}"
        );
        // A lackey access claiming a size no access has.
        let e = read(" S 1000,18446744073709551615\n".as_bytes(), "l")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("l, line 1") && e.contains("18446744073709551615") && e.contains("65536"),
            "{e}"
        );
        // More accesses than the model holds (the limit made small here).
        let e = read_limited("0\n".repeat(11).as_bytes(), "yes", 10)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("yes, line 11") && e.contains("more than 10 memory accesses"),
            "{e}"
        );
        assert_eq!(
            read_limited("0\n".repeat(10).as_bytes(), "yes", 10)
                .unwrap()
                .accesses
                .len(),
            10
        );
        // Bytes that are not text.
        let e = read(&b"0x10\n\xff\xfe\n"[..], "bin")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bin, line 2") && e.contains("not text"), "{e}");
    }
}
