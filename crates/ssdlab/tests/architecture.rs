//! The plan of the house, checked from the source text (docs/architecture.md, "Layers and
//! rules"): the layer order of the top-level modules, the imports that must never be, and no
//! import circle between the files of one folder.
//!
//! An import is any path a file's code names: its `use` trees, and paths written inline
//! (`crate::…`, `super::…`, `self::…`, or a child module's name), outside comments, string and
//! char literals and `#[cfg(test)]` items (tests may name anything; a module declared under
//! `#[cfg(test)]` is left out whole). Each path is resolved to the file of the module it names.
//! A folder's `mod.rs` re-exporting its own children's items is followed to the child, so that
//! `super::Item` re-exported from a sibling counts as an import of that sibling; a re-export of
//! another module's item (`pub use crate::config::X`) is not: the importer names the
//! re-exporting module, and the re-exporter answers for its own import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crate's top-level modules, top to bottom. A module imports only modules of the rows
/// below its own; two modules of one row import neither each other. Strict rows also mean that
/// no import circle can join two top-level modules.
const LAYERS: &[&[&str]] = &[
    // The crate root: it declares every module, and no module names it.
    &["lib"],
    // The live server, a driver that shares run's precondition and result assembly.
    &["serve"],
    // One run: a device, a driver, the result.
    &["run"],
    // Drivers of the device: jobs, replay, NVMe registers, HFSL, fusion host; the paging model.
    &["driver", "paging"],
    // The device knows no workload, and a workload (a description) knows no device.
    &["device", "workload"],
    &["ctrl"],
    // Host interfaces; the FTL (functional, no timing).
    &["iface", "ftl"],
    // The host's I/O stack (its cost is charged through the interface); NAND, PCM, DRAM.
    &["host", "media"],
    // Result types.
    &["stats"],
    // The schema: it owns its types, the models import it.
    &["config"],
    // The device's vocabulary (requests, commands, `Op`), its events, errors.
    &["request", "event", "error"],
    // The engine: time, queue, rng, slab.
    &["sim"],
];

/// The drivers of the device, and the layers inside the device they never name.
const DRIVERS: &[&str] = &["driver", "paging", "serve", "run"];
const DEVICE_LAYERS: &[&str] = &["ctrl", "iface", "ftl", "host", "media"];
/// What config must not import: the models.
const MODELS: &[&str] = &["device", "ctrl", "iface", "ftl", "host", "media"];

/// Imports that must never be, whatever the rows say: (from any of, to any of, the rule). Some
/// are upward imports too; they are listed so that the failure names the rule.
const NEVERS: &[(&[&str], &[&str], &str)] = &[
    (&["ctrl"], DRIVERS, "the controller never imports a driver"),
    (
        &["ctrl"],
        &["workload"],
        "the controller never imports the workload (`Op` is request.rs's)",
    ),
    (
        &["ctrl"],
        &["host"],
        "the controller never imports the host (it reaches it through iface::HostPort)",
    ),
    (&["media"], &["ftl"], "media never import the FTL"),
    (&["media"], &["ctrl"], "media never import the controller"),
    (
        &["ftl"],
        &["ctrl"],
        "the FTL is functional: no firmware, no timing",
    ),
    (&["ftl"], &["iface"], "the FTL knows no host protocol"),
    (&["iface"], &["ctrl"], "the interface knows no controller"),
    (
        &["config"],
        MODELS,
        "config imports no model; the models import config",
    ),
    (
        DRIVERS,
        DEVICE_LAYERS,
        "drivers reach the device only through its boundary (device's public API)",
    ),
    (&["device"], &["workload"], "the device knows no workload"),
    (
        &["workload"],
        &["device"],
        "a workload is a description, not a driver",
    ),
    (&["stats"], &["device"], "result types know no layer"),
];

/// Breaks of the plan still owed, each (file, module it names, the work that ends it). They are
/// excused from the checks above; `every_debt_is_still_owed` fails once one is paid, so the
/// list only shrinks.
const DEBTS: &[(&str, &str, &str)] = &[];

// ---------------------------------------------------------------------------------------------
// Reading the source.

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `text` without comments, and with every string and char literal emptied (`""`, `' '`), so
/// that neither braces nor paths inside them count. Lifetimes stay.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && is_ident(b[i - 1]);
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            // A raw string: r"…", r#"…"#, br"…".
            b'r' if (!prev_ident || (b[i - 1] == b'b' && (i < 2 || !is_ident(b[i - 2])))) && {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                b.get(i + 1 + hashes) == Some(&b'"')
            } =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                i += 2 + hashes;
                while i < b.len() && !b[i..].starts_with(&close) {
                    i += 1;
                }
                i += close.len();
                out.extend_from_slice(b"\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.extend_from_slice(b"\"\"");
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{…}', '→'), or a lifetime ('a), which stays.
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p)
                } else {
                    let len = match b.get(i + 1) {
                        Some(&c) if c >= 0xf0 => 4,
                        Some(&c) if c >= 0xe0 => 3,
                        Some(&c) if c >= 0xc0 => 2,
                        _ => 1,
                    };
                    (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
                };
                match end {
                    Some(e) => {
                        out.extend_from_slice(b"' '");
                        i = e + 1;
                    }
                    None => {
                        out.push(b'\'');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("stripping keeps whole characters")
}

/// `code` without its `#[cfg(test)]` items, and the names of the modules declared under
/// `#[cfg(test)]` in a file of their own (`mod tests;`).
fn drop_test_items(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut test_mods = Vec::new();
    let mut rest = 0;
    while let Some(at) = code[rest..].find(ATTR).map(|p| rest + p) {
        out.push_str(&code[rest..at]);
        // The item: up to its `;`, or to the brace that closes its body (a `;` inside
        // brackets, as in `[u8; 4]`, is not its end).
        let start = at + ATTR.len();
        let mut i = start;
        let mut depth = 0;
        while i < b.len() {
            match b[i] {
                b'{' | b'[' | b'(' => depth += 1,
                b']' | b')' => depth -= 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let item: Vec<&str> = code[start..i].split_whitespace().collect();
        if let [.., "mod", name] = item.as_slice() {
            test_mods.push(name.trim_end_matches(';').to_string());
        }
        rest = i;
    }
    out.push_str(&code[rest..]);
    (out, test_mods)
}

/// One path of a `use` tree, and the name it brings in (its last segment, its alias, or `*`).
#[derive(Debug, PartialEq)]
struct UsePath {
    segs: Vec<String>,
    name: String,
}

/// The paths of a `use` tree: `a::{b, c::{d as e, self}, f::*}` gives a::b, a::c::d (as e),
/// a::c, a::f::*.
fn expand_use(tree: &str) -> Vec<UsePath> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand_into(
        tree.trim().trim_start_matches("::"),
        &mut Vec::new(),
        &mut out,
    );
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<UsePath>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let mut head: Vec<String> = tree[..open]
            .split("::")
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().to_string())
            .collect();
        let n = head.len();
        prefix.append(&mut head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut from = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_into(&inner[from..i], prefix, out);
                    from = i + 1;
                }
                _ => {}
            }
        }
        expand_into(&inner[from..], prefix, out);
        prefix.truncate(prefix.len() - n);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut segs = prefix.clone();
    segs.extend(path.split("::").map(|s| s.trim().to_string()));
    if segs.last().is_some_and(|s| s == "self") {
        segs.pop();
    }
    let name = alias.unwrap_or_else(|| segs.last().cloned().unwrap_or_default());
    out.push(UsePath { segs, name });
}

/// A source file of the crate.
struct Source {
    /// Its path under `src/`, with `/`: "ctrl/hil.rs".
    rel: String,
    /// Its module path: ["ctrl", "hil"]; [] for lib.rs.
    module: Vec<String>,
    /// Its `use` declarations.
    uses: Vec<UsePath>,
    /// The paths it writes inline, outside `use` declarations.
    inline: Vec<Vec<String>>,
    /// Its code as read (without comments, literals and test items), to find item definitions.
    code: String,
}

impl Source {
    /// The top-level module it belongs to ("lib" for the crate root).
    fn top(&self) -> &str {
        self.module.first().map_or("lib", |s| s.as_str())
    }

    /// Whether its code defines an item `name`.
    fn defines(&self, name: &str) -> bool {
        let b = self.code.as_bytes();
        [
            "struct ", "enum ", "fn ", "trait ", "type ", "const ", "static ", "union ", "mod ",
        ]
        .iter()
        .any(|kw| {
            let pat = format!("{kw}{name}");
            self.code.match_indices(&pat).any(|(at, _)| {
                let end = at + pat.len();
                (at == 0 || !is_ident(b[at - 1])) && (end == b.len() || !is_ident(b[end]))
            })
        })
    }
}

/// `code`'s `use` declarations, and the code without them.
fn split_uses(code: &str) -> (Vec<UsePath>, String) {
    let b = code.as_bytes();
    let mut uses = Vec::new();
    let mut rest = String::with_capacity(code.len());
    let mut i = 0;
    let mut copied = 0;
    while let Some(at) = code[i..].find("use ").map(|p| i + p) {
        i = at + 4;
        if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':') {
            continue;
        }
        let Some(end) = code[i..].find(';').map(|p| i + p) else {
            break;
        };
        uses.extend(expand_use(&code[i..end]));
        rest.push_str(&code[copied..at]);
        copied = end + 1;
        i = end + 1;
    }
    rest.push_str(&code[copied..]);
    (uses, rest)
}

/// The paths of two segments or more written in `code` (`a::b::C`), each from its first
/// segment; generic arguments (`::<`) end a path.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        loop {
            let s = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            segs.push(code[s..i].to_string());
            if b[i..].starts_with(b"::") && b.get(i + 2).is_some_and(|&c| is_ident(c)) {
                i += 2;
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            out.push(segs);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// An import: file `from` names `path`, which is module file `to`.
struct Edge {
    from: usize,
    to: usize,
    path: String,
}

struct Crate {
    sources: Vec<Source>,
    /// Module path → index in `sources`.
    modules: BTreeMap<Vec<String>, usize>,
}

impl Crate {
    fn read() -> Crate {
        Crate::read_from(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
    }

    fn read_from(src: &Path) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        files.sort();
        let mut sources = Vec::new();
        let mut test_only: Vec<Vec<String>> = Vec::new();
        for f in files {
            let rel = f
                .strip_prefix(src)
                .unwrap()
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let mut module: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(String::from)
                .collect();
            if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                module.pop();
            }
            let (code, test_mods) = drop_test_items(&strip(&std::fs::read_to_string(&f).unwrap()));
            for m in test_mods {
                let mut p = module.clone();
                p.push(m);
                test_only.push(p);
            }
            let (uses, rest) = split_uses(&code);
            let inline = inline_paths(&rest);
            sources.push(Source {
                rel,
                module,
                uses,
                inline,
                code,
            });
        }
        sources.retain(|s| !test_only.iter().any(|t| s.module.starts_with(t)));
        let modules = sources
            .iter()
            .enumerate()
            .map(|(i, s)| (s.module.clone(), i))
            .collect();
        Crate { sources, modules }
    }

    /// The module file `path`, named from the file `from`, resolves to; `None` for a path that
    /// names no module of the crate (another crate, a type's associated item, a variant).
    fn resolve(&self, from: usize, path: &[String], depth: u32) -> Option<usize> {
        let here = &self.sources[from].module;
        let (mut module, mut segs) = match path.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &path[1..]),
            Some("self") => (here.clone(), &path[1..]),
            Some("super") => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                (here[..here.len().checked_sub(ups)?].to_vec(), &path[ups..])
            }
            Some(first) => {
                let mut child = here.clone();
                child.push(first.to_string());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                (here.clone(), path)
            }
            None => return None,
        };
        while let Some(seg) = segs.first() {
            let mut next = module.clone();
            next.push(seg.clone());
            if !self.modules.contains_key(&next) {
                break;
            }
            module = next;
            segs = &segs[1..];
        }
        let at = self.modules[&module];
        match segs.first() {
            // The crate root's re-exports are for the crate's users: inside the crate, naming
            // one (`crate::Result`) imports the root.
            Some(name) if depth < 4 && !module.is_empty() => {
                Some(self.through_reexport(at, name, depth).unwrap_or(at))
            }
            _ => Some(at),
        }
    }

    /// The child of module file `at` whose item `name` it re-exports (or imports: a child
    /// module may name its parent's imports too), if any.
    fn through_reexport(&self, at: usize, name: &str, depth: u32) -> Option<usize> {
        let inside = |to: usize| {
            let (m, t) = (&self.sources[at].module, &self.sources[to].module);
            t.len() > m.len() && t.starts_with(m)
        };
        for u in &self.sources[at].uses {
            if u.name == name {
                let to = self.resolve(at, &u.segs, depth + 1)?;
                return inside(to).then_some(to);
            }
            if u.name == "*" {
                let to = self.resolve(at, &u.segs[..u.segs.len() - 1], depth + 1);
                if let Some(to) = to.filter(|&to| inside(to) && self.sources[to].defines(name)) {
                    return Some(to);
                }
            }
        }
        None
    }

    /// Every import between two files of the crate, once per (file, path).
    fn edges(&self) -> Vec<Edge> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (from, s) in self.sources.iter().enumerate() {
            let paths = s.uses.iter().map(|u| &u.segs).chain(s.inline.iter());
            for p in paths {
                let Some(to) = self.resolve(from, p, 0) else {
                    continue;
                };
                let path = p.join("::");
                if to != from && seen.insert((from, path.clone())) {
                    out.push(Edge { from, to, path });
                }
            }
        }
        out
    }

    /// The imports across top-level modules, once per (file, module named), with the first
    /// path that names it.
    fn module_imports(&self) -> Vec<(&Source, &str, String)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for e in self.edges() {
            let (f, t) = (&self.sources[e.from], &self.sources[e.to]);
            if f.top() != t.top() && seen.insert((e.from, t.top())) {
                out.push((f, t.top(), e.path));
            }
        }
        out
    }
}

fn row(module: &str) -> Option<usize> {
    LAYERS.iter().position(|r| r.contains(&module))
}

fn owed(file: &str, to: &str) -> bool {
    DEBTS.iter().any(|&(f, t, _)| f == file && t == to)
}

// ---------------------------------------------------------------------------------------------
// The rules: each gives one line per break, naming the file, the path and the rule.

fn modules_without_a_row(c: &Crate) -> Vec<String> {
    let tops: BTreeSet<&str> = c.sources.iter().map(|s| s.top()).collect();
    tops.iter()
        .filter(|t| row(t).is_none())
        .map(|t| format!("module `{t}` has no row in LAYERS (tests/architecture.rs): give it one"))
        .collect()
}

fn upward_imports(c: &Crate) -> Vec<String> {
    let mut found = Vec::new();
    for (f, to, path) in c.module_imports() {
        let (Some(a), Some(b)) = (row(f.top()), row(to)) else {
            continue;
        };
        if a >= b && !owed(&f.rel, to) {
            let how = if a == b { "beside" } else { "above" };
            found.push(format!(
                "src/{}: `{path}` imports `{to}`, which sits {how} `{}`: a module imports only \
                 modules below it (LAYERS in tests/architecture.rs)",
                f.rel,
                f.top()
            ));
        }
    }
    found
}

fn forbidden_imports(c: &Crate) -> Vec<String> {
    let mut found = Vec::new();
    for (f, to, path) in c.module_imports() {
        let broken = NEVERS
            .iter()
            .filter(|n| n.0.contains(&f.top()) && n.1.contains(&to));
        for (_, _, why) in broken {
            if !owed(&f.rel, to) {
                found.push(format!("src/{}: `{path}` imports `{to}`: {why}", f.rel));
            }
        }
    }
    found
}

fn paid_debts(c: &Crate) -> Vec<String> {
    let imports = c.module_imports();
    DEBTS
        .iter()
        .filter(|(file, to, _)| !imports.iter().any(|(f, t, _)| f.rel == *file && t == to))
        .map(|(file, to, why)| {
            format!("src/{file} no longer imports `{to}` ({why}): remove it from DEBTS")
        })
        .collect()
}

/// Circles between files of one folder. A folder's mod.rs is the folder itself: it declares
/// its files, and they may name what it holds, so it takes no part in a circle.
fn folder_circles(c: &Crate) -> Vec<String> {
    let folder = |i: usize| {
        let rel = &c.sources[i].rel;
        rel.rfind('/').map_or("", |p| &rel[..p]).to_string()
    };
    let is_face = |i: usize| c.sources[i].rel.ends_with("mod.rs") || c.sources[i].rel == "lib.rs";
    let mut next: BTreeMap<usize, BTreeMap<usize, String>> = BTreeMap::new();
    for e in c.edges() {
        if folder(e.from) == folder(e.to) && !is_face(e.from) && !is_face(e.to) {
            next.entry(e.from)
                .or_default()
                .entry(e.to)
                .or_insert(e.path);
        }
    }
    let mut found = Vec::new();
    for (&from, tos) in &next {
        for (&to, path) in tos {
            // A way back from `to` to `from` inside the folder.
            let mut stack = vec![vec![to]];
            let mut seen = BTreeSet::new();
            while let Some(way) = stack.pop() {
                let last = *way.last().unwrap();
                if last == from {
                    let names: Vec<&str> = way.iter().map(|&i| c.sources[i].rel.as_str()).collect();
                    found.push(format!(
                        "src/{}: `{path}` imports src/{}, which imports it back ({}): two files \
                         of one folder never import each other; move what they share to where \
                         it belongs (often the folder's mod.rs)",
                        c.sources[from].rel,
                        c.sources[to].rel,
                        names.join(" -> ")
                    ));
                    break;
                }
                if seen.insert(last) {
                    for &n in next.get(&last).into_iter().flat_map(|m| m.keys()) {
                        let mut w = way.clone();
                        w.push(n);
                        stack.push(w);
                    }
                }
            }
        }
    }
    found
}

fn fail_if_any(what: &str, found: Vec<String>) {
    assert!(
        found.is_empty(),
        "{what} ({} found):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn every_top_level_module_has_its_row() {
    fail_if_any(
        "modules outside the plan",
        modules_without_a_row(&Crate::read()),
    );
}

#[test]
fn no_module_imports_a_module_above_it() {
    fail_if_any("upward imports", upward_imports(&Crate::read()));
}

#[test]
fn no_import_the_plan_forbids() {
    fail_if_any(
        "imports the plan forbids",
        forbidden_imports(&Crate::read()),
    );
}

#[test]
fn every_debt_is_still_owed() {
    fail_if_any("debts paid", paid_debts(&Crate::read()));
}

#[test]
fn no_import_circle_between_files_of_one_folder() {
    fail_if_any(
        "import circles inside a folder",
        folder_circles(&Crate::read()),
    );
}

/// A small crate that breaks every rule once (naming the crate root's re-export of `Result` is
/// an upward import too), and hides more breaks in a comment, a string and a test module, which
/// must not count.
#[test]
fn each_rule_catches_its_break() {
    let src = Path::new(env!("CARGO_TARGET_TMPDIR")).join("architecture-fixture/src");
    let _ = std::fs::remove_dir_all(&src);
    let files = [
        (
            "lib.rs",
            "pub mod ctrl; pub mod driver; pub mod error; pub mod ftl; pub mod host; \
             pub mod media; pub use error::Result;",
        ),
        (
            "error.rs",
            "pub type Result<T> = std::result::Result<T, ()>;",
        ),
        (
            "media/mod.rs",
            "use crate::ftl::Ftl; // use crate::ctrl::A;\nconst S: &str = \"crate::ctrl::A\";\n\
             #[cfg(test)]\nmod tests { use crate::ctrl::A; }",
        ),
        ("ftl/mod.rs", "pub struct Ftl;"),
        ("host/mod.rs", "pub struct HostCpu;"),
        ("ctrl/mod.rs", "pub mod a; pub mod b; pub use a::A;"),
        (
            "ctrl/a.rs",
            "use super::b::B; use crate::host::HostCpu; pub struct A;",
        ),
        ("ctrl/b.rs", "use super::A; pub struct B;"),
        ("driver/mod.rs", "fn f() { let _ = crate::ctrl::a::A; }"),
        ("workload/mod.rs", "fn f() -> crate::Result<()> { Ok(()) }"),
        ("attic/mod.rs", ""),
    ];
    for (rel, text) in files {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let c = Crate::read_from(&src);
    assert_eq!(
        modules_without_a_row(&c),
        ["module `attic` has no row in LAYERS (tests/architecture.rs): give it one"]
    );
    let up = upward_imports(&c);
    assert_eq!(up.len(), 2, "{up:#?}");
    assert!(up[0].starts_with(
        "src/media/mod.rs: `crate::ftl::Ftl` imports `ftl`, which sits above `media`"
    ));
    assert!(up[1].starts_with(
        "src/workload/mod.rs: `crate::Result` imports `lib`, which sits above `workload`"
    ));
    let never = forbidden_imports(&c);
    let want = [
        "src/ctrl/a.rs: `crate::host::HostCpu` imports `host`: the controller never imports the host",
        "src/driver/mod.rs: `crate::ctrl::a::A` imports `ctrl`: drivers reach the device only through its boundary",
        "src/media/mod.rs: `crate::ftl::Ftl` imports `ftl`: media never import the FTL",
    ];
    assert_eq!(never.len(), want.len(), "{never:#?}");
    for (got, want) in never.iter().zip(want) {
        assert!(got.starts_with(want), "{got}");
    }
    let circles = folder_circles(&c);
    assert_eq!(circles.len(), 2, "{circles:#?}");
    assert!(circles[0].starts_with(
        "src/ctrl/a.rs: `super::b::B` imports src/ctrl/b.rs, which imports it back (ctrl/b.rs -> ctrl/a.rs)"
    ));
    assert!(circles[1].starts_with(
        "src/ctrl/b.rs: `super::A` imports src/ctrl/a.rs, which imports it back (ctrl/a.rs -> ctrl/b.rs)"
    ));
}

// ---------------------------------------------------------------------------------------------
// The reader itself: it sees what the rules rely on.

#[test]
fn the_check_sees_the_known_layering() {
    let c = Crate::read();
    let imports = c.module_imports();
    let has = |from: &str, to: &str| imports.iter().any(|(f, t, _)| f.top() == from && *t == to);
    // The device uses its layers; the layers do not use the device.
    for layer in ["ctrl", "host", "iface", "ftl"] {
        assert!(has("device", layer), "device should use {layer}");
        assert!(!has(layer, "device"), "{layer} must not use device");
    }
    assert!(has("driver", "device"));
    // File-level edges: a sibling by `super::`, a sibling through its folder's glob re-export,
    // a child by its own name, and a test module left out.
    let edges = c.edges();
    let file_edge = |from: &str, to: &str| {
        edges
            .iter()
            .any(|e| c.sources[e.from].rel == from && c.sources[e.to].rel == to)
    };
    assert!(file_edge("ctrl/hil.rs", "ctrl/fil.rs"));
    assert!(file_edge("ctrl/hybrid.rs", "ctrl/mod.rs"));
    assert!(file_edge("driver/nvme_regs/pci.rs", "config/interface.rs"));
    assert!(file_edge("config/mod.rs", "config/units.rs"));
    assert!(!c.sources.iter().any(|s| s.rel == "ctrl/test_rig.rs"));
}

#[test]
fn strip_empties_comments_and_literals_and_keeps_lifetimes() {
    let text = "a // crate::x\n/* crate::y /* nested */ */ \"crate::z\" r#\"crate::{\"# b'{' '\\n' '→' &'a T";
    assert_eq!(strip(text), "a \n \"\" \"\" b' ' ' ' ' ' &'a T");
}

#[test]
fn test_items_are_dropped_and_test_modules_named() {
    let code = "use a::b;\n#[cfg(test)]\nmod tests;\nfn f() { g() }\n#[cfg(test)]\nmod inner { use crate::x; fn h() {} }\nfn k() {}";
    let (kept, mods) = drop_test_items(code);
    assert_eq!(kept, "use a::b;\n\nfn f() { g() }\n\nfn k() {}");
    assert_eq!(mods, vec!["tests".to_string()]);
}

#[test]
fn use_trees_expand_to_paths() {
    let got: Vec<(String, String)> = expand_use("crate::a::{b, c::{d as e, self}, f::*}")
        .into_iter()
        .map(|u| (u.segs.join("::"), u.name))
        .collect();
    let want = [
        ("crate::a::b", "b"),
        ("crate::a::c::d", "e"),
        ("crate::a::c", "c"),
        ("crate::a::f::*", "*"),
    ];
    assert_eq!(got, want.map(|(p, n)| (p.to_string(), n.to_string())));
    let (uses, rest) = split_uses("pub use x::Y;\nfn f() { crate::m::g::<u8>(); reuse(); }");
    assert_eq!(uses[0].segs, ["x", "Y"]);
    assert_eq!(inline_paths(&rest), vec![vec!["crate", "m", "g"]]);
}
