//! The documentation matches the code:
//!
//! - every relative link in README.md and docs/*.md points to a file that
//!   exists, and every `#anchor` to a heading of its page (GitHub's slugs);
//! - the key tables of docs/policies.md list every key of
//!   schemas/policy.schema.json and no key the schema lacks, and every
//!   policy YAML example in the docs uses only keys the schema has;
//! - the metrics table lists exactly the metrics `src/` registers, and the
//!   docs name no other `augur_…` identifier the code does not hold.

// Helpers outside `#[test]` fns: a file that cannot be read should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// README.md, then every docs/*.md in name order.
fn doc_files() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "no docs/*.md");
    let mut files = vec![root().join("README.md")];
    files.extend(docs);
    files
}

// ---------------------------------------------------------------------------
// Markdown, as far as these checks need it.

/// One block of a markdown file: a fenced code block, or a run of
/// consecutive non-blank lines outside fences (a paragraph, a list, a
/// table, a heading).
#[derive(Debug)]
enum Block {
    Fenced {
        info: String,
        body: String,
    },
    Text {
        /// 1-based number of the block's first line.
        line: usize,
        lines: Vec<String>,
    },
}

/// A fence opening or closing line: its character and run length, and
/// the rest of the line. A backtick fence's info string may hold no
/// backtick (CommonMark), so "```` ```python ```` …" is inline code.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let t = line.trim_start();
    for c in ['`', '~'] {
        let n = t.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            let rest = &t[n..];
            if c == '`' && rest.contains('`') {
                return None;
            }
            return Some((c, n, rest.trim()));
        }
    }
    None
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, String, Vec<&str>)> = None;
    let mut para: Option<(usize, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some((c, n, info, body)) = &mut open {
            match fence(line) {
                Some((c2, n2, rest)) if c2 == *c && n2 >= *n && rest.is_empty() => {
                    out.push(Block::Fenced {
                        info: std::mem::take(info),
                        body: body.join("\n"),
                    });
                    open = None;
                }
                _ => body.push(line),
            }
            continue;
        }
        if let Some((c, n, info)) = fence(line) {
            if let Some((line, lines)) = para.take() {
                out.push(Block::Text { line, lines });
            }
            open = Some((c, n, info.to_string(), Vec::new()));
        } else if line.trim().is_empty() {
            if let Some((line, lines)) = para.take() {
                out.push(Block::Text { line, lines });
            }
        } else {
            para.get_or_insert_with(|| (i + 1, Vec::new()))
                .1
                .push(line.to_string());
        }
    }
    assert!(open.is_none(), "a fenced code block is never closed");
    if let Some((line, lines)) = para {
        out.push(Block::Text { line, lines });
    }
    out
}

/// Splits text into its inline code spans and the text around them, the
/// spans replaced by a space (CommonMark: a span opens with a run of n
/// backticks and closes at the next run of exactly n; a run with no
/// closing one is literal text).
fn code_spans(text: &str) -> (String, Vec<String>) {
    let b = text.as_bytes();
    let run = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let (mut plain, mut spans) = (String::new(), Vec::new());
    let (mut i, mut from) = (0, 0);
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run(i);
        let mut j = i + n;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = run(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                plain.push_str(&text[from..i]);
                plain.push(' ');
                let inner = text[i + n..j].replace('\n', " ");
                let inner = match inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')) {
                    Some(s) if !s.trim().is_empty() => s.to_string(),
                    _ => inner,
                };
                spans.push(inner);
                i = j + n;
                from = i;
            }
            None => i += n,
        }
    }
    plain.push_str(&text[from..]);
    (plain, spans)
}

/// The heading text of a line (ATX headings only, which is all the docs use).
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = line[level..].strip_prefix(' ')?;
    Some((level, rest.trim().trim_end_matches('#').trim()))
}

/// GitHub's anchor for a heading: lower case, every character but
/// letters, digits, spaces, `-` and `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a markdown file, a repeated heading's as GitHub numbers
/// them (`x`, `x-1`, `x-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for block in blocks(text) {
        let Block::Text { lines, .. } = block else {
            continue;
        };
        for line in &lines {
            if let Some((_, h)) = heading(line) {
                let s = slug(h);
                let n = seen.entry(s.clone()).or_insert(0);
                out.insert(if *n == 0 {
                    s.clone()
                } else {
                    format!("{s}-{n}")
                });
                *n += 1;
            }
        }
    }
    out
}

/// The targets of the inline links and images (`[text](target "title")`)
/// and link reference definitions (`[label]: target`) outside code, with
/// the line each is on.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for block in blocks(text) {
        let Block::Text { line, lines } = block else {
            continue;
        };
        for (k, raw) in lines.iter().enumerate() {
            let (plain, _) = code_spans(raw);
            let mut rest = plain.as_str();
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let end = after.find(')').unwrap_or(after.len());
                let target = after[..end].split_whitespace().next().unwrap_or("");
                let target = target.trim_start_matches('<').trim_end_matches('>');
                out.push((line + k, target.to_string()));
                rest = &after[end..];
            }
            let t = plain.trim_start();
            if let Some(close) = t.strip_prefix('[').and_then(|s| s.find("]:")) {
                let target = t[close + 3..].split_whitespace().next().unwrap_or("");
                out.push((line + k, target.to_string()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// 1. Links and anchors.

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = read(&file);
        for (line, target) in links(&text) {
            let at = format!("{}:{line}: ({target})", rel(&file));
            if target.is_empty() {
                problems.push(format!("{at}: empty link target"));
                continue;
            }
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else if path.starts_with('/') {
                problems.push(format!("{at}: absolute path; GitHub resolves it from the repository root only on github.com"));
                continue;
            } else {
                file.parent().expect("parent").join(path)
            };
            if !dest.exists() {
                problems.push(format!("{at}: {} does not exist", dest.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_none_or(|x| x != "md") {
                problems.push(format!("{at}: an anchor into a file that is not markdown"));
                continue;
            }
            let known = anchors(&read(&dest));
            if !known.contains(anchor) {
                problems.push(format!(
                    "{at}: no heading with anchor #{anchor} in {} (its anchors: {})",
                    rel(&dest),
                    known.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
    assert!(
        checked > 20,
        "only {checked} relative links found: is the link parser broken?"
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("Test it"), "test-it");
    assert_eq!(
        slug("Rules for very small models (`tools.small_model`)"),
        "rules-for-very-small-models-toolssmall_model"
    );
    assert_eq!(
        slug("Do no harm: a right answer comes back unchanged"),
        "do-no-harm-a-right-answer-comes-back-unchanged"
    );
    let a = anchors("# A\n\n```sh\n# not a heading\n```\n\n## A\n");
    assert_eq!(a, BTreeSet::from(["a".to_string(), "a-1".to_string()]));
    assert_eq!(
        links("see [x](a.md#b) and `[y](not-a-link)`\n\n```\n[z](c.md)\n```\n"),
        vec![(1, "a.md#b".to_string())]
    );
}

// ---------------------------------------------------------------------------
// 2. The policy reference against schemas/policy.schema.json.

fn policy_schema() -> Value {
    serde_json::from_str(&read(&root().join("schemas/policy.schema.json")))
        .expect("policy.schema.json is JSON")
}

/// `node` with every local `$ref` followed.
fn deref<'a>(schema: &'a Value, mut node: &'a Value) -> &'a Value {
    while let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let name = r
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("unexpected $ref {r}"));
        node = &schema["$defs"][name];
        assert!(!node.is_null(), "$ref {r} points to nothing");
    }
    node
}

/// Every key path below `node`, written as the key tables write them:
/// `a`, `a.b`, `a[].c` for the keys of an array's items.
fn key_paths(schema: &Value, node: &Value, prefix: &str, skip: &[&str], out: &mut Vec<String>) {
    let node = deref(schema, node);
    let Some(props) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, child) in props {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        out.push(path.clone());
        if skip.contains(&path.as_str()) {
            continue;
        }
        let child = deref(schema, child);
        key_paths(schema, child, &path, skip, out);
        if let Some(items) = child.get("items") {
            key_paths(schema, items, &format!("{path}[]"), skip, out);
        }
    }
}

/// Resolves a key path written as the key tables write it.
fn resolve<'a>(schema: &'a Value, mut node: &'a Value, path: &str) -> Result<&'a Value, String> {
    for segment in path.split('.') {
        let (name, items) = match segment.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (segment, false),
        };
        node = deref(schema, node)
            .get("properties")
            .and_then(|p| p.get(name))
            .ok_or_else(|| format!("`{path}`: the schema has no key `{name}` there"))?;
        if items {
            node = deref(schema, node)
                .get("items")
                .ok_or_else(|| format!("`{path}`: `{name}` is not an array"))?;
        }
    }
    Ok(node)
}

/// The key paths in the first column of the tables under `### {section}`
/// of docs/policies.md's `## Keys`.
fn key_table(doc: &str, section: &str) -> Vec<String> {
    let mut in_keys = false;
    let mut in_section = false;
    let mut rows = Vec::new();
    for block in blocks(doc) {
        let Block::Text { lines, .. } = block else {
            continue;
        };
        for line in &lines {
            if let Some((level, h)) = heading(line) {
                if level <= 2 {
                    in_keys = h == "Keys";
                }
                in_section = in_keys && level == 3 && h == section;
                continue;
            }
            if !in_section || !line.starts_with('|') {
                continue;
            }
            let first = line
                .trim_matches('|')
                .split('|')
                .next()
                .unwrap_or("")
                .trim();
            if first == "Key" || first.chars().all(|c| matches!(c, '-' | ':' | ' ')) {
                continue; // the header and its separator
            }
            let (_, spans) = code_spans(first);
            assert!(
                !spans.is_empty(),
                "policies.md, ### {section}: a row names no key in backticks: {line}"
            );
            rows.extend(spans);
        }
    }
    assert!(
        !rows.is_empty(),
        "docs/policies.md has no key table under `## Keys` / `### {section}`"
    );
    rows
}

/// Compares one key table with the schema: every schema key is listed (a
/// key counts as listed when a key below it is), and every listed key
/// exists in the schema.
fn compare(
    schema: &Value,
    node: &Value,
    table: &str,
    listed: &[String],
    skip: &[&str],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut paths = Vec::new();
    key_paths(schema, node, "", skip, &mut paths);
    assert!(
        !paths.is_empty(),
        "no keys found under {table} in the schema"
    );
    for path in &paths {
        let covered = listed.iter().any(|l| {
            l == path
                || l.strip_prefix(path.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
        });
        if !covered {
            problems.push(format!(
                "### {table}: the schema's key `{path}` is not listed"
            ));
        }
    }
    for l in listed {
        if let Err(e) = resolve(schema, node, l) {
            problems.push(format!("### {table}: {e}"));
        }
    }
    problems
}

#[test]
fn policy_reference_lists_exactly_the_schema_keys() {
    let schema = policy_schema();
    let doc = read(&root().join("docs/policies.md"));
    let settings = &schema["$defs"]["settings"];
    assert!(
        settings.get("properties").is_some(),
        "the schema has no $defs/settings"
    );
    // The per-model settings (under `defaults` and each `models` glob) have
    // their own table; the top-level one names `defaults` and `models`.
    let mut problems = compare(
        &schema,
        &schema,
        "Top level",
        &key_table(&doc, "Top level"),
        // A key's `rate_limit` is the same block as the settings' one.
        &[
            "defaults",
            "models",
            "auth.keys[].rate_limit",
            "auth.keys[].guard",
        ],
    );
    problems.extend(compare(
        &schema,
        settings,
        "Settings",
        &key_table(&doc, "Settings"),
        &[],
    ));
    // The brief form of the same promise: every top-level key, every
    // per-model key and every `tools` / `validate` key is named in
    // backticks on the page.
    let mut named = BTreeSet::new();
    for block in blocks(&doc) {
        if let Block::Text { lines, .. } = block {
            for span in code_spans(&lines.join("\n")).1 {
                named.extend(
                    span.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .filter(|t| !t.is_empty())
                        .map(str::to_string),
                );
            }
        }
    }
    let mut keys = Vec::new();
    key_paths(
        &schema,
        &schema,
        "",
        &[
            "defaults",
            "models",
            "auth.keys[].rate_limit",
            "auth.keys[].guard",
        ],
        &mut keys,
    );
    key_paths(&schema, settings, "", &[], &mut keys);
    for path in keys {
        let key = path.rsplit(['.', ']']).next().unwrap_or(&path);
        if !named.contains(key) {
            problems.push(format!(
                "the key `{key}` ({path}) is never named in backticks"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/policies.md does not match schemas/policy.schema.json:\n{}",
        problems.join("\n")
    );
}

/// Walks a YAML example against the schema, collecting keys it lacks.
fn unknown_keys(schema: &Value, node: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let node = deref(schema, node);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if let Some(child) = node.get("properties").and_then(|p| p.get(key)) {
                    unknown_keys(schema, child, v, &here, out);
                } else if let Some(child) =
                    node.get("additionalProperties").filter(|a| a.is_object())
                {
                    unknown_keys(schema, child, v, &here, out);
                } else if node.get("properties").is_some() {
                    out.push(here);
                }
            }
        }
        Value::Array(items) => {
            if let Some(child) = node.get("items") {
                for (i, v) in items.iter().enumerate() {
                    unknown_keys(schema, child, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn policy_examples_use_only_schema_keys() {
    let schema = policy_schema();
    let mut problems = Vec::new();
    let mut examples = 0;
    for file in doc_files() {
        for block in blocks(&read(&file)) {
            let Block::Fenced { info, body } = block else {
                continue;
            };
            if !matches!(info.split_whitespace().next(), Some("yaml" | "yml")) {
                continue;
            }
            examples += 1;
            let value: Value = yaml_serde::from_str(&body).unwrap_or_else(|e| {
                panic!("{}: a YAML example does not parse: {e}\n{body}", rel(&file))
            });
            let mut unknown = Vec::new();
            unknown_keys(&schema, &schema, &value, "", &mut unknown);
            for key in unknown {
                problems.push(format!(
                    "{}: `{key}` is not a key of the policy schema",
                    rel(&file)
                ));
            }
        }
    }
    assert!(examples >= 3, "only {examples} YAML policy examples found");
    assert!(
        problems.is_empty(),
        "policy examples:\n{}",
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------
// 3. Metrics.

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The string literals of `src/**/*.rs` that start with `augur_`, and of
/// those the ones that name a metric: the first argument of a `counter!`,
/// `gauge!` or `histogram!` call (`metrics::` or not, `describe_` too).
fn source_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    assert!(!files.is_empty(), "no Rust sources under src/");
    let (mut literals, mut metrics) = (BTreeSet::new(), BTreeSet::new());
    let mut problems = Vec::new();
    for file in files {
        let text = read(&file);
        let mut rest = text.as_str();
        let next = |rest: &str| {
            let found = ["\"augur_", "\"gen_ai_"].map(|p| rest.find(p));
            found.into_iter().flatten().min()
        };
        while let Some(at) = next(rest) {
            let lit = &rest[at + 1..];
            let end = lit
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(lit.len());
            if lit[end..].starts_with('"') {
                literals.insert(lit[..end].to_string());
            }
            rest = &lit[end..];
        }
        for mac in ["counter!(", "gauge!(", "histogram!("] {
            for (at, _) in text.match_indices(mac) {
                let args = text[at + mac.len()..].trim_start();
                let Some(lit) = args.strip_prefix('"') else {
                    let line = text[..at].lines().count();
                    problems.push(format!(
                        "{}:{line}: `{mac}` without a string literal name: this test cannot read it",
                        rel(&file)
                    ));
                    continue;
                };
                let name = &lit[..lit.find('"').unwrap_or(0)];
                metrics.insert(name.to_string());
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    (literals, metrics)
}

/// The metric names in the first column of the docs' metrics table: the
/// table rows of README.md and docs/*.md whose first cell names `augur_…`
/// or `gen_ai_…` in backticks.
fn documented_metrics() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in doc_files() {
        for block in blocks(&read(&file)) {
            let Block::Text { lines, .. } = block else {
                continue;
            };
            for line in lines.iter().filter(|l| l.starts_with('|')) {
                let first = line.trim_matches('|').split('|').next().unwrap_or("");
                for span in code_spans(first).1 {
                    if span.starts_with("augur_") || span.starts_with("gen_ai_") {
                        out.insert(span, rel(&file));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn metrics_table_lists_exactly_the_registered_metrics() {
    let (literals, registered) = source_names();
    let documented = documented_metrics();
    assert!(
        registered.len() >= 20,
        "only {} metrics found in src/: {registered:?}",
        registered.len()
    );
    let mut problems = Vec::new();
    for name in &registered {
        // augur's own, or the OpenTelemetry GenAI conventions' names.
        if !name.starts_with("augur_") && !name.starts_with("gen_ai_") {
            problems.push(format!(
                "`{name}` is registered but not named augur_… or gen_ai_…"
            ));
        } else if !documented.contains_key(name) {
            problems.push(format!(
                "`{name}` is registered in src/ but not in the metrics table"
            ));
        }
    }
    for (name, file) in &documented {
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            problems.push(format!(
                "{file}: `{name}` in the metrics table is not a metric name"
            ));
        } else if !registered.contains(name) {
            let also = if literals.contains(name) {
                " (src/ holds it, but not as a metric)"
            } else {
                ""
            };
            problems.push(format!(
                "{file}: `{name}` is in the metrics table but src/ registers no such metric{also}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "metrics table:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_augur_name_in_the_docs_is_in_the_code() {
    // Metric names in prose (`augur_retries_total{cause="grammar"}`) and
    // done-chunk fields (`augur_validation`) alike must be spelled as src/
    // spells them.
    let (literals, _) = source_names();
    let mut problems = Vec::new();
    for file in doc_files() {
        for block in blocks(&read(&file)) {
            let text = match block {
                Block::Fenced { body, .. } => body,
                Block::Text { lines, .. } => code_spans(&lines.join("\n")).1.join(" "),
            };
            for token in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if token.starts_with("augur_") && !literals.contains(token) {
                    problems.push(format!("{}: `{token}` is not in src/", rel(&file)));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "unknown augur_ names:\n{}",
        problems.join("\n")
    );
}
