//! Dependencies point one way: no import cycle between the crate's
//! top-level modules (`src/foo.rs` and `src/foo/**` are `foo`), counting
//! every `crate::foo` path outside test code, doc links included.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// Every `.rs` file under `dir`, but test files.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .contains("tests")
        {
            out.push(path);
        }
    }
}

/// The top-level module names `text` refers to as `crate::name` or in a
/// `use crate::{a, b::c}` group, before its first `#[cfg(test)]`.
fn referenced(text: &str) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut names = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item) = (0usize, String::new());
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    _ => {}
                }
                if ch == ',' && depth == 0 {
                    names.insert(ident(item.trim()));
                    item.clear();
                } else {
                    item.push(ch);
                }
            }
            names.insert(ident(item.trim()));
        } else {
            names.insert(ident(rest));
        }
    }
    names.remove("");
    names
}

#[test]
fn top_level_modules_import_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules: BTreeSet<String> = fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let from = top.trim_end_matches(".rs").to_string();
        if from == "lib" || from == "main" {
            continue;
        }
        for to in referenced(&fs::read_to_string(&file).unwrap()) {
            if to != from && modules.contains(&to) {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    // A module reaches itself through its imports: a cycle.
    for start in &modules {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, path)) = stack.pop() {
            for to in edges.get(&at).into_iter().flatten().map(|(to, _)| to) {
                if to == start {
                    let mut steps = Vec::new();
                    let mut full = path.clone();
                    full.push(to.clone());
                    for w in full.windows(2) {
                        let files = &edges[&w[0]][&w[1]];
                        steps.push(format!("{} -> {} ({:?})", w[0], w[1], files));
                    }
                    panic!("import cycle:\n  {}", steps.join("\n  "));
                }
                if seen.insert(to.clone()) {
                    let mut next = path.clone();
                    next.push(to.clone());
                    stack.push((to.clone(), next));
                }
            }
        }
    }
}

#[test]
fn references_are_read_from_paths_and_groups() {
    let r = referenced(
        "use crate::{a::x, b, c::{d, e}};\nfn f() { crate::g::h(); }\n#[cfg(test)]\nuse crate::z;",
    );
    assert_eq!(
        r,
        ["a", "b", "c", "g"].iter().map(|s| s.to_string()).collect()
    );
}
