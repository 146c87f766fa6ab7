//! Pattern prices: close to what patterns compile to, Unicode classes and
//! `(?i)` included, and found in one pass however long the pattern.

use serde_json::{Map, Value, json};

use super::{MAX_NESTING, measure, pattern_cost};
use crate::schema::budget::{BudgetError, Limits, check};

/// Thompson NFA states of each pattern as the validator compiles it,
/// measured with `regex-automata` 0.4.18 (`nfa::thompson::NFA::new`, less
/// the 5 states of the empty pattern). `jsonschema` translates `\d`, `\w`
/// and `\s` first (`[0-9]`, `[A-Za-z0-9_]`, ECMA-262 white space): those
/// rows are measured as translated.
const MEASURED: &[(&str, u64)] = &[
    (r"\p{L}{1,50}", 14_976),
    (r"(?i)abc{1,100}", 201),
    // `[A-Za-z0-9_]{1,300}`; untranslated (a look-around elsewhere in the
    // pattern) it is 95,222: see the test below.
    (r"\w{1,300}", 599),
    (r"[^a]{1,100}", 899),
    (r".{1,1000}", 9_005),
    (r"^[\p{L}' -]{1,14}$", 4_189),
    (r"(?i)[\p{L}]{1,200}", 59_889),
    (r"(?i:\p{L}){1,50}", 14_976),
    (r"(?x) \p{L} {1,50}", 14_976),
    (r"(?<n>\p{L}){1,20}", 6_029),
    (r"[\p{L}\p{N}_ -]{1,50}", 16_537),
    (r"\p{L}{2,300}", 89_818),
    (r"\pL", 298),
    (r"\P{L}", 300),
    (r"[^\p{Ll}]", 89),
    (r"\p{Lu}", 74),
    (r"(?i)\p{Lu}", 80),
    (r"\p{Greek}", 22),
    (r"\p{N}", 92),
    (r"\p{Assigned}", 310),
    (r"\p{Grapheme_Base}", 343),
    (r"[\s\S]{1,50}", 449),
    (".", 8),
    ("(?i)kkkkkkkkkk", 30),
    ("(?i)[a-z]", 4),
    ("日本", 6),
    ("[à-ÿ]", 2),
    ("[ąćęłńóśźż]", 4),
    ("[一-龥]", 6),
    ("[😀-🙏]", 5),
    (r"[\x{801}-\x{fffe}]", 8),
    (r"[\x{81}-\x{10fffe}]", 11),
    (r"[\x{10001}-\x{10fffe}]", 10),
    (r"^[a-z]{1,500}$", 999),
    (r"^.{1,200}$", 1_799),
    (r"^\d{5}(-\d{4})?$", 13),
    (r"^\+?[1-9]\d{1,14}$", 30),
    (r"^\+?[0-9 ()-]{7,20}$", 35),
    (r"^\w+@\w+\.\w+$", 8),
    (r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$", 9),
    (r"^[^@\s]+@[^@\s]+\.[^@\s]+$", 56),
    (r"^https?://[^\s/$.?#].[^\s]*$", 52),
    (
        r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$",
        36,
    ),
];

#[test]
fn the_price_of_a_pattern_is_close_to_its_compiled_size() {
    let mut off = Vec::new();
    for &(p, real) in MEASURED {
        let cost = pattern_cost(p);
        // Never under half the real size, never over four times it.
        if cost * 2 < real || cost > 4 * real {
            off.push(format!("{p}: priced {cost}, compiles to {real}"));
        }
    }
    assert!(off.is_empty(), "{off:#?}");
}

#[test]
fn perl_classes_are_unicode_where_the_pattern_is_not_translated() {
    // A look-around or back-reference keeps the pattern as written, for
    // `fancy-regex`: there `\w` is Unicode (316 states, where the
    // translated `[A-Za-z0-9_]` is one). `\w{1,300}` compiles to 95,222.
    for p in [
        r"(?=x)\w{1,300}",
        r"\w{1,300}(?!x)",
        r"(?<=x)\w{1,300}",
        r"(x)\1\w{1,300}",
        r"(?P<x>x)(?P=x)\w{1,300}",
    ] {
        let cost = pattern_cost(p);
        assert!((95_222 / 2..4 * 95_222).contains(&cost), "{p}: {cost}");
    }
    assert!(pattern_cost(r"\d{1,300}") < 1_000);
    assert!(pattern_cost(r"(?=x)\d{1,300}") > 7_000);
}

/// `jsonschema` escapes every `[` inside a class, but its class ends at the
/// first `]`, where the `regex` crate reads `[]…` as a `]` first in a class:
/// what follows can be a nested class after all.
#[test]
fn classes_are_read_as_the_validator_compiles_them() {
    // Translated, the inner `[` is escaped: `{1,100}` repeats a `]`.
    assert!(pattern_cost("[a[b]c]{1,100}") < 400);
    // `[` `]` `[\p{L}]` `]`: one class, with `\p{L}` nested, 100 times.
    assert!(pattern_cost(r"[][\p{L}]]{1,100}") >= 29_942);
    assert!(pattern_cost(r"[^][\p{L}]]{1,100}") >= 29_942);
}

/// A hostile `format` schema of 8 KB, every property a Unicode class with
/// a counted repetition, compiled to about 240 MB before these prices.
fn unicode_names(pattern: &str) -> Value {
    let mut props = Map::new();
    while Value::Object(props.clone()).to_string().len() < 8 * 1024 {
        let name = format!("name{}", props.len());
        props.insert(name, json!({"type": "string", "pattern": pattern}));
    }
    json!({"type": "object", "properties": props})
}

#[test]
fn unicode_classes_with_counted_repetitions_are_refused() {
    let limits = Limits::default();
    for p in [
        r"^[\p{L}' -]{1,14}$",
        r"^\p{L}{1,14}$",
        r"^[\p{L}\p{N}]{1,20}$",
    ] {
        let e = check(&unicode_names(p), &limits).unwrap_err();
        assert_eq!(e, BudgetError::PatternsTooCostly { limit: 50_000 }, "{p}");
    }
    for p in [
        r"(?i)[\p{L}]{1,200}",
        r"\p{L}{1,50}",
        r".{1,2000}",
        r"\w{1,300}(?!x)",
    ] {
        let e = check(&json!({"type": "string", "pattern": p}), &limits).unwrap_err();
        let want = BudgetError::PatternTooCostly {
            limit: 10_000,
            at: "/".into(),
        };
        assert_eq!(e, want, "{p}");
    }
}

#[test]
fn patterns_of_ordinary_schemas_stay_far_under_the_limits() {
    let ordinary = [
        r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
        r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
        r"^https?://[^\s/$.?#].[^\s]*$",
        r"^(https?|ftp)://[^\s/$.?#].[^\s]*$",
        r"^\+?[1-9]\d{1,14}$",
        r"^\+?[0-9 ()-]{7,20}$",
        r"^\(?\d{3}\)?[-. ]?\d{3}[-. ]?\d{4}$",
        r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        r"^\d{4}-\d{2}-\d{2}$",
        r"^[A-Z]{2}\d{2}[ ]?\d{4}$",
        r"^\p{L}+$",
        r"^\p{Lu}\p{Ll}+$",
        r"^[\p{L} '-]+$",
        r"^(?i)[a-z]+$",
        r"^\w{3,32}$",
        r"^(?=.*[A-Z]).{8,}$",
        r"^.{1,200}$",
    ];
    let limits = Limits::default();
    for p in ordinary {
        let cost = pattern_cost(p);
        assert!(cost * 5 < limits.max_pattern_cost, "{p}: {cost}");
    }
    let props: Map<String, Value> = ordinary
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("p{i}"), json!({"type": "string", "pattern": p})))
        .collect();
    let r = check(&json!({"type": "object", "properties": props}), &limits).unwrap();
    assert!(r.pattern_cost * 5 < limits.max_patterns_cost, "{r:?}");
    // augur's own patterns for string formats (the grammar copy of a tool's
    // parameters is compiled when its own schema is not) fit one by one.
    let formats = [
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
    ];
    let own = formats
        .iter()
        .filter_map(|f| crate::schema::formats::pattern_for(f))
        .chain(
            ["email", "hostname", "uri"]
                .iter()
                .filter_map(|f| crate::schema::formats_common::pattern_for(f)),
        );
    for p in own {
        let cost = pattern_cost(p);
        assert!(cost < limits.max_pattern_cost, "{p}: {cost}");
    }
}

/// Every hostile shape of about 500 KB is priced in one pass: at most a
/// few reads per character (a 498 KB run of unclosed `\p{` took 32 s
/// before, every escape searching the rest of the pattern for its `}`).
#[test]
fn pricing_is_linear_in_the_pattern() {
    let n = 500 * 1024;
    let shapes = [
        r"\p{", r"\P{", r"\x{", r"\u{", r"\k<", r"(?P<", r"(?", "(?i", "[", "[^", "[]", "a{",
        "a{1", "a{1,", "{", "(", ")", "(a)", "|", "a*", "[a-", r"[\p{", r"\", "(?x)#", "(?<", "é",
        "😀", "[😀-",
    ];
    for shape in shapes {
        let p = shape.repeat(n / shape.len());
        let (cost, reads) = measure(&p);
        assert!(
            reads <= 8 * p.len(),
            "{shape:?}: {reads} reads for {} bytes",
            p.len()
        );
        let _ = cost;
    }
    // Nested deeper than the compilers accept: refused without reading on.
    let deep = "(".repeat(n);
    let (cost, reads) = measure(&deep);
    assert_eq!(cost, u64::MAX);
    assert!(reads < n + 10 * MAX_NESTING, "{reads}");
    let limits = Limits::default();
    let unclosed = r"\p{".repeat(170_000);
    let e = check(&json!({"type": "string", "pattern": unclosed}), &limits);
    assert!(e.is_ok(), "{e:?}");
}
