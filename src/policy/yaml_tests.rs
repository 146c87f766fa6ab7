//! Unit tests of `yaml`.

use super::*;

#[test]
fn parses_like_the_plain_parser() {
    let text = "a: [1, -2, 1.5, true, null, x]\nb: {c: 'd'}\n";
    let plain: Value = yaml_serde::from_str(text).unwrap();
    assert_eq!(parse("f", text).unwrap(), plain);
    assert_eq!(parse("f", "# nothing\n---\n").unwrap(), Value::Null);
}

#[test]
fn aliases_cannot_multiply_a_file() {
    let items = "x, ".repeat(1000);
    let uses = "*a, ".repeat(1000);
    let text = format!("a: &a [{items}]\nb: [{uses}]\n");
    let err = parse("f.yaml", &text).unwrap_err().to_string();
    assert!(
        err.starts_with("f.yaml: invalid YAML") && err.contains("aliases"),
        "{err}"
    );
    // A few aliases are fine.
    let v = parse("f", "a: &l {requests_per_minute: 1}\nb: *l\n").unwrap();
    assert_eq!(v["b"]["requests_per_minute"], 1);
}

#[test]
fn deep_text_is_refused_before_parsing() {
    let text = format!("defaults: {}", "[".repeat(100_000));
    let err = parse("f.yaml", &text).unwrap_err().to_string();
    assert_eq!(err, "f.yaml: line 1: nested deeper than 64 levels");
}
