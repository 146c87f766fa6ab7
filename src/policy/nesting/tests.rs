//! The nesting pre-scan: depths it finds, nesting it refuses, and that no
//! scalar or comment can hide nesting from it (checked against the parser
//! itself on many generated texts).

use serde_json::Value;

use super::{Refusal, check};

fn depth(text: &str) -> usize {
    check(text, 64).unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
}

fn too_deep(text: &str) -> bool {
    matches!(check(text, 64), Err(Refusal::TooDeep { .. }))
}

/// Depth of a parsed value: scalars 0, a collection one more than its deepest item.
fn value_depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(value_depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(value_depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn depths_of_ordinary_policy_text() {
    assert_eq!(depth(""), 0);
    assert_eq!(depth("# only a comment\n"), 0);
    assert_eq!(depth("a: 1\n"), 1);
    assert_eq!(depth("a:\n  b: 1\n"), 2);
    assert_eq!(depth("[[1]]"), 2);
    assert_eq!(depth("- - - a\n"), 3);
    assert_eq!(depth("a: [1, {b: 2}]\n"), 3);
    assert_eq!(depth("a:\n- b\n"), 2, "a sequence at its key's column");
    assert_eq!(
        depth("[a: b]\n"),
        2,
        "a pair in a flow sequence is a mapping"
    );
    let keys = "auth:\n  keys:\n    - id: ci\n      models: [\"gemma3:*\"]\n      rate_limit: {requests_per_minute: 1}\n";
    assert_eq!(depth(keys), 5);
}

#[test]
fn deep_nesting_is_refused_with_its_line() {
    let flow = format!("a: 1\ndefaults: {}", "[".repeat(100_000));
    assert_eq!(check(&flow, 64), Err(Refusal::TooDeep { line: 2 }));
    let maps: String = (0..100)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    assert!(too_deep(&maps));
    assert!(too_deep(&format!("{}a\n", "- ".repeat(100))));
    let alternating: String = (0..100)
        .map(|i| format!("{}k:\n{}-\n", " ".repeat(2 * i), " ".repeat(2 * i)))
        .collect();
    assert!(too_deep(&alternating));
    assert!(too_deep(&format!("x: {}", "[a: ".repeat(40))));
    // At the limit is fine.
    assert_eq!(depth(&format!("{}{}", "[".repeat(64), "]".repeat(64))), 64);
}

#[test]
fn brackets_in_scalars_and_comments_do_not_count() {
    let open = "[".repeat(100);
    for text in [
        format!("a: \"{open}\"\n"),
        format!("a: '{open}'\n"),
        format!("# {open}\n"),
        format!("a: 1 # {open}\n"),
        format!("a: x{open}\n"),
        format!("a: |\n  {open}\n  more\nb: 1\n"),
        format!("a: >-\n    {open}\n\n    {open}\n"),
        format!("a: foo\n  {open}\n"),
        format!("- foo\n  '{open}\n"),
        format!("a: \"multi\n  line {open}\"\n"),
        format!("a: 'it''s {open}'\n"),
        format!("a: \"say \\\"{open}\"\n"),
    ] {
        assert!(check(&text, 64).is_ok(), "{text:?}");
        // The parser agrees: these are scalars.
        let v: Value = yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(value_depth(&v) <= 2, "{text:?}");
    }
}

#[test]
fn closing_brackets_in_scalars_cannot_hide_nesting() {
    let close = "]".repeat(100);
    let deep = format!("{}x{}", "[".repeat(100), "]".repeat(100));
    for prefix in [
        format!("a: [\"{close}\"]\nb: "),
        format!("a: ['{close}']\nb: "),
        format!("a: [x, # {close}\n  y]\nb: "),
        format!("a: |\n  {close}\nb: "),
        format!("a: x{close}\nb: "),
        format!("a: foo\n  {close}\nb: "),
        format!("- a: foo\n  'x{close}'\n- "),
        format!("a: [b{close}\nc: "),
        format!("a: \"x\\\"{close}\"\nb: "),
    ] {
        let text = format!("{prefix}{deep}\n");
        assert!(check(&text, 64).is_err(), "{text:?}");
    }
}

#[test]
fn tags_and_broken_tokens_are_refused() {
    for (text, what) in [
        ("a: !!str x\n", "tags"),
        ("a: b: c\n", "mapping values"),
        ("a: @x\n", "cannot start"),
        ("a: |x\n  y\n", "header"),
    ] {
        match check(text, 64) {
            Err(Refusal::Syntax { line: 1, what: w }) => assert!(w.contains(what), "{text:?}: {w}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// Small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every text the parser accepts gets a depth from the pre-scan at least
/// as deep as the parsed value.
#[test]
fn the_prescan_never_undercounts_what_the_parser_builds() {
    const PIECES: &[&str] = &[
        "[", "]", "{", "}", ",", ":", ": ", "- ", "? ", "'", "\"", "#", " ", "  ", "\n", "\n  ",
        "\n    ", "a", "b", "|", ">", "\\", "-", "''", "\t", "---", "\r\n", "1",
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut parsed = 0;
    for _ in 0..40_000 {
        let len = 1 + rng.next() % 24;
        let text: String = (0..len)
            .map(|_| PIECES[(rng.next() % PIECES.len() as u64) as usize])
            .collect();
        let Ok(value) = yaml_serde::from_str::<Value>(&text) else {
            continue;
        };
        parsed += 1;
        match check(&text, 64) {
            Ok(d) => assert!(d >= value_depth(&value), "{text:?}: {d} < {value}"),
            Err(e) => panic!("{text:?} parses as {value} but was refused: {e:?}"),
        }
    }
    assert!(parsed > 2_000, "too few valid texts: {parsed}");
}
