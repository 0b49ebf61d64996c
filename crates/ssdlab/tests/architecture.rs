//! The crate's top-level modules import each other without a circle: each layer depends only on
//! layers below it. Read from the source text: every `crate::name` outside comments and test
//! modules is an edge from the file's top-level module to `name`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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

/// Top-level module → the top-level modules its code names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .iter()
            .next()
            .unwrap()
            .to_string_lossy()
            .replace(".rs", "");
        if top == "lib" || rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Test modules sit at the end of a file; they may name anything.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for line in code.lines() {
            let line = line.split("//").next().unwrap();
            let mut rest = line;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    g.entry(top.clone()).or_default().insert(name);
                }
            }
        }
    }
    g
}

/// A path `from → … → to` in `g`, if any.
fn path(g: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(p) = stack.pop() {
        let last = p.last().unwrap().clone();
        if last == to && p.len() > 1 {
            return Some(p);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for n in g.get(&last).into_iter().flatten() {
            let mut q = p.clone();
            q.push(n.clone());
            stack.push(q);
        }
    }
    None
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let g = module_graph();
    let mut circles = Vec::new();
    for (m, deps) in &g {
        for d in deps {
            if let Some(back) = path(&g, d, m) {
                circles.push(format!("{m} -> {}", back.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_check_sees_the_known_layering() {
    let g = module_graph();
    // The device uses its layers; the layers do not use the device.
    for layer in ["ctrl", "host", "iface", "ftl"] {
        assert!(g["device"].contains(layer), "device should use {layer}");
        assert!(!g[layer].contains("device"), "{layer} must not use device");
    }
    assert!(g["driver"].contains("device"));
}
