//! Dependencies point one way: no import cycle between the crate's
//! top-level modules (`src/foo.rs` and `src/foo/**` are `foo`), counting
//! every `crate::foo` path outside test code, doc links included; and
//! none between the pipeline's own modules (`super::` paths too), whose
//! stages each use only the ones below them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// `text` up to its first test-only item (`#[cfg(test)]`,
/// `#[cfg(all(test, …))]`).
/// A test module declared by name (`#[cfg(test)] mod tests;`) is
/// passed over: only an item written here ends the text.
fn before_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test") {
            let declared = lines.peek().is_some_and(|next| {
                let next = next.trim_start();
                next.ends_with(';')
                    && (next.starts_with("mod ") || next.starts_with("pub(crate) mod "))
            });
            if declared {
                lines.next();
                continue;
            }
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every `.rs` file under `dir`, but test files.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
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
    let text = before_tests(text);
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

/// The module path (`a/b`, the folder's own `mod.rs` as `""`) of every
/// source file under `dir`, with its text.
fn folder_modules(dir: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    sources(dir, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(dir).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().replace('\\', "/");
            if name == "mod" {
                name.clear();
            } else if let Some(parent) = name.strip_suffix("/mod") {
                name = parent.to_string();
            }
            (name, fs::read_to_string(&file).unwrap())
        })
        .collect()
}

/// Every path a source names: the leaves of its `use` trees, and paths
/// written inline (`super::x::y`, `crate::a::b`), before `#[cfg(test)]`.
fn named_paths(text: &str) -> Vec<String> {
    let text = before_tests(text);
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for part in code.split("use ").skip(1) {
        let Some(tree) = part.split(';').next() else {
            continue;
        };
        let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
        flatten("", &tree, &mut out);
    }
    let is_path = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            // Inside a longer path (`super::super::x`), or the head of a
            // `use` group (read as the group's leaves above): not a path.
            if i > 0
                && code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            {
                continue;
            }
            let path: String = code[i..].chars().take_while(|c| is_path(*c)).collect();
            if code[i + path.len()..].starts_with('{') {
                continue;
            }
            out.push(path.trim_end_matches(':').to_string());
        }
    }
    out
}

/// The leaves of a `use` tree written without spaces.
fn flatten(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let (mut depth, mut item, mut items) = (0usize, String::new(), Vec::new());
    for ch in tree.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(ch);
    }
    items.push(item);
    for item in items {
        match item.split_once("::{") {
            Some((head, rest)) if item.ends_with('}') => {
                flatten(&format!("{prefix}{head}::"), &rest[..rest.len() - 1], out)
            }
            _ => match item.strip_prefix('{').and_then(|i| i.strip_suffix('}')) {
                Some(inner) => flatten(prefix, inner, out),
                None if !item.is_empty() => out.push(format!("{prefix}{item}")),
                None => {}
            },
        }
    }
}

/// The module of `folder` (as `crate::a::b`) a path written in module
/// `from` leads to: the longest known module it names.
fn resolve(path: &str, from: &str, crate_path: &str, known: &BTreeSet<String>) -> Option<String> {
    let (mut base, rest): (Vec<&str>, &str) = if let Some(rest) = path
        .strip_prefix(crate_path)
        .and_then(|r| r.strip_prefix("::"))
    {
        (Vec::new(), rest)
    } else if path.starts_with("super::") || path.starts_with("self::") {
        (from.split('/').filter(|s| !s.is_empty()).collect(), path)
    } else {
        return None;
    };
    let mut segs: Vec<&str> = rest.split("::").collect();
    while let Some(first) = segs.first().copied() {
        match first {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        segs.remove(0);
    }
    let mut best = None;
    for n in 0..=segs.len() {
        let candidate: Vec<&str> = base
            .iter()
            .copied()
            .chain(segs[..n].iter().copied())
            .collect();
        let name = candidate.join("/");
        if known.contains(&name) {
            best = Some(name);
        }
    }
    best
}

/// The imports between the modules of `src/<folder>` (module paths as
/// [`folder_modules`] names them), parents and the folder's own `mod.rs`
/// left out.
fn folder_edges(folder: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    let modules = folder_modules(&dir);
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let crate_path = format!("crate::{folder}");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, text) in &modules {
        for path in named_paths(text) {
            let Some(to) = resolve(&path, from, &crate_path, &known) else {
                continue;
            };
            // A module's own parents hold it: not an import.
            if !to.is_empty() && to != *from && !from.starts_with(&format!("{to}/")) {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

/// A cycle among `edges`, written `a -> b -> a`.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    for start in edges.keys() {
        let mut stack = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let at = path.last().unwrap();
            for to in edges.get(at).into_iter().flatten() {
                if to == start {
                    return Some(format!("{} -> {to}", path.join(" -> ")));
                }
                if seen.insert(to.clone()) {
                    let mut next = path.clone();
                    next.push(to.clone());
                    stack.push(next);
                }
            }
        }
    }
    None
}

#[test]
fn the_pipelines_modules_import_each_other_one_way() {
    let edges = folder_edges("pipeline");
    assert!(
        edges.get("deliver").is_some_and(|e| e.contains("chunk")),
        "the reader sees the pipeline's imports: {edges:?}"
    );
    if let Some(cycle) = cycle(&edges) {
        panic!("import cycle in src/pipeline: {cycle}");
    }
}

/// Inside every folder of `src/` too, modules import each other one way.
#[test]
fn every_folders_modules_import_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders = Vec::new();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            folders.push(path.file_name().unwrap().to_string_lossy().to_string());
        }
    }
    assert!(folders.len() >= 10, "{folders:?}");
    let surface = folder_edges("surface");
    assert!(
        surface
            .get("anthropic/stream")
            .is_some_and(|e| e.contains("anthropic/answer")),
        "the reader sees nested imports: {surface:?}"
    );
    let cycles: Vec<String> = folders
        .iter()
        .filter_map(|f| cycle(&folder_edges(f)).map(|c| format!("src/{f}: {c}")))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn pipeline_paths_resolve_from_where_they_are_written() {
    let known: BTreeSet<String> = ["job", "attempt", "attempt/plain", "chunk"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let r = |p: &str, from: &str| resolve(p, from, "crate::pipeline", &known);
    assert_eq!(
        r("super::plain::recover", "attempt/fallback"),
        Some("attempt/plain".into())
    );
    assert_eq!(
        r("super::super::job::Job", "attempt/fallback"),
        Some("job".into())
    );
    assert_eq!(
        r("crate::pipeline::chunk::done_chunk", "x"),
        Some("chunk".into())
    );
    assert_eq!(r("crate::tools::ToolSet", "x"), None);
    let mut out = Vec::new();
    flatten("", "super::{super::{job::Job,chunk},plain}", &mut out);
    assert_eq!(
        out,
        [
            "super::super::job::Job",
            "super::super::chunk",
            "super::plain"
        ]
    );
}

/// Where a module of `src/<folder>` names an item of one of its own
/// parent modules (`super::Item`, `crate::folder::Item`): a parent's
/// `mod.rs` declares and re-exports its children, so a child importing it
/// runs back up. Shared types live in a leaf module beside the children.
fn parent_item_imports(folder: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    let modules = folder_modules(&dir);
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let crate_path = format!("crate::{folder}");
    let mut found = Vec::new();
    for (from, text) in &modules {
        for path in named_paths(text) {
            let Some(to) = resolve(&path, from, &crate_path, &known) else {
                continue;
            };
            let is_parent = to != *from && (to.is_empty() || from.starts_with(&format!("{to}/")));
            if is_parent {
                found.push(format!("src/{folder}/{from}: {path}"));
            }
        }
    }
    found
}

/// The `src/` folders.
fn folders() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders: Vec<String> = fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    folders.sort();
    folders
}

/// No module imports an item of its parent: in every folder, the parent
/// only declares and re-exports.
#[test]
fn no_module_imports_its_parents_items() {
    let found: Vec<String> = folders()
        .iter()
        .flat_map(|f| parent_item_imports(f))
        .collect();
    assert!(
        found.is_empty(),
        "imports of a parent's items ({}):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn a_parent_item_import_is_seen() {
    let known: BTreeSet<String> = ["", "a", "a/b"].iter().map(|s| s.to_string()).collect();
    let r = |p: &str, from: &str| resolve(p, from, "crate::f", &known);
    assert_eq!(r("super::Item", "a/b"), Some("a".into()));
    assert_eq!(r("crate::f::Item", "a"), Some("".into()));
    assert_eq!(r("super::b::Item", "a/c"), Some("a/b".into()));
}

/// The methods each module of `src/pipeline` defines on `Job`.
fn job_methods(modules: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut defined = BTreeMap::new();
    for (module, text) in modules {
        let text = before_tests(text);
        for block in text.split("\nimpl Job {").skip(1) {
            let body = block.split("\n}\n").next().unwrap_or_default();
            for line in body.lines() {
                let line = line.trim_start();
                let Some(at) = line.find("fn ") else { continue };
                if !line.starts_with("pub") && !line.starts_with("async") && !line.starts_with("fn")
                {
                    continue;
                }
                let name: String = line[at + 3..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                defined.insert(name, module.clone());
            }
        }
    }
    defined
}

/// A method on the shared `Job` is a dependency as an import is: the
/// pipeline's modules, counting the calls of each other's `Job` methods,
/// still depend on each other one way (no stage calls back up into a
/// stage above it through the shared `impl`).
#[test]
fn job_methods_are_called_one_way() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline");
    let modules = folder_modules(&dir);
    let defined = job_methods(&modules);
    assert!(
        defined
            .get("complete")
            .is_some_and(|m| m.starts_with("attempt")),
        "the reader sees Job's methods: {defined:?}"
    );
    let mut edges = folder_edges("pipeline");
    for (from, text) in &modules {
        let text = before_tests(text);
        for (name, to) in &defined {
            let called =
                text.contains(&format!(".{name}(")) || text.contains(&format!("Job::{name}("));
            if called && to != from && !to.is_empty() && !from.starts_with(&format!("{to}/")) {
                edges.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    if let Some(cycle) = cycle(&edges) {
        panic!("a call loop through Job's methods in src/pipeline: {cycle}");
    }
}

/// Unit tests have one arrangement (docs/code.md): none inline in a
/// production file, and a file's own in `<file>_tests.rs` beside it,
/// declared by that file.
#[test]
fn unit_tests_live_beside_their_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    walk(&src, &mut all);
    let mut wrong = Vec::new();
    for file in &all {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = fs::read_to_string(file).unwrap();
        let in_tests =
            name.contains("tests") || file.components().any(|c| c.as_os_str() == "tests");
        if !in_tests
            && text
                .lines()
                .any(|l| l.trim_start().starts_with("mod tests {"))
        {
            wrong.push(format!("{}: a test module written inline", file.display()));
        }
        if let Some(stem) = name.strip_suffix("_tests.rs") {
            let owner = file.with_file_name(format!("{stem}.rs"));
            let declared = fs::read_to_string(&owner)
                .is_ok_and(|t| t.contains(&format!("#[path = \"{name}\"]")));
            if !declared {
                wrong.push(format!("{}: not declared by {stem}.rs", file.display()));
            }
        }
    }
    assert!(
        all.len() > 100,
        "the reader sees the sources: {}",
        all.len()
    );
    assert!(
        wrong.is_empty(),
        "unit tests out of place:\n{}",
        wrong.join("\n")
    );
}
