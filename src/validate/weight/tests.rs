//! The estimates against bytes measured with a counting allocator (see the
//! parent module): each figure below is what `compile` (and, for patterns,
//! checking answers on 1 + 8 threads) left allocated, measured once with
//! jsonschema 0.60.2; an estimate must not fall below it, nor be wildly
//! above it.

use serde_json::{Map, Value, json};

use super::pattern::pattern_bytes;
use super::{estimate_for, with_caches};

/// An object schema whose properties, made by `f(i, n)`, fill 11,000 bytes.
fn until(i: usize, f: impl Fn(usize, usize) -> (String, Value)) -> Value {
    let mut props = Map::new();
    let mut n = 0;
    while Value::Object(props.clone()).to_string().len() < 11_000 {
        let (k, v) = f(i, n);
        props.insert(k, v);
        n += 1;
    }
    json!({"type": "object", "properties": props})
}

fn flat(i: usize) -> Value {
    until(i, |i, n| (format!("p{n}_{i}"), json!({"type": "string"})))
}

fn described(i: usize) -> Value {
    until(i, |i, n| {
        let d = format!(
            "A long human description of field number {n} in schema {i}, \
             which validators ignore entirely"
        );
        (
            format!("d{n}_{i}"),
            json!({"type": "string", "description": d}),
        )
    })
}

fn enums(i: usize) -> Value {
    until(i, |i, n| {
        let e = json!({"enum": ["red", "green", "blue", format!("c{i}"), n]});
        (format!("e{n}_{i}"), e)
    })
}

fn any_of(i: usize) -> Value {
    until(i, |i, n| {
        let u = json!({"anyOf": [{"type": "string", "maxLength": 10}, {"type": "integer"}, {"type": "null"}]});
        (format!("u{n}_{i}"), u)
    })
}

/// 60 levels of `{"properties": {<name>: <next>, "k": …}, "required": [<name>]}`.
fn deep(i: usize, name_len: usize) -> Value {
    let mut v = json!({"type": "string"});
    for d in 0..60 {
        let name = format!("n{d}_{i}{}", "x".repeat(name_len));
        v = json!({"type": "object", "properties": {name.clone(): v, "k": {"type": "integer"}},
            "required": [name]});
    }
    v
}

fn deep_wide(i: usize) -> Value {
    let mut v = json!({"type": "string"});
    for d in 0..60 {
        let mut props = Map::new();
        props.insert(format!("n{d}_{i}"), v);
        for k in 0..4 {
            props.insert(format!("k{k}"), json!({"type": "integer"}));
        }
        v = json!({"type": "object", "properties": props});
    }
    v
}

#[test]
fn schema_estimates_cover_the_measured_bytes() {
    // (shape, schema, measured bytes held compiled)
    let shapes: [(&str, Value, u64); 7] = [
        ("flat strings", flat(0), 250_093),
        ("described", described(0), 105_605),
        ("enums", enums(0), 389_661),
        ("anyOf", any_of(0), 336_309),
        ("60 deep", deep(0, 0), 385_181),
        ("60 deep, 130-byte names", deep(0, 120), 2_362_018),
        ("60 deep, 5 wide", deep_wide(0), 709_517),
    ];
    for (name, schema, measured) in shapes {
        let estimate = estimate_for(&schema, 2);
        assert!(
            estimate >= measured && estimate <= 3 * measured,
            "{name}: estimate {estimate}, measured {measured}"
        );
    }
}

#[test]
fn the_old_weight_of_48_bytes_per_byte_of_text_was_below_deep_schemas() {
    for (schema, measured) in [(deep(0, 120), 2_362_018), (deep_wide(0), 709_517)] {
        let old = 4096 + 48 * schema.to_string().len() as u64;
        assert!(old < measured, "{old} {measured}");
        assert!(estimate_for(&schema, 2) >= measured);
    }
}

#[test]
fn pattern_estimates_cover_the_measured_bytes() {
    // (pattern, measured compiled, measured with the caches of 9 threads)
    let patterns = [
        (r"^[a-z]{1,40}$", 11_552, 37_536),
        (r"^[a-z]{1,200}$", 26_912, 83_616),
        (r"^[a-z]+$", 8_416, 22_096),
        (r"^\d{3}-\d{4}$", 9_360, 20_192),
        (r"^\p{L}+$", 59_184, 169_024),
        (r"^(?=.*\d)(?=.*[a-z]).{8,}$", 53_904, 155_024),
        (r"(\w+\s){5,30}", 214_256, 305_328),
        (r"\w{1,500}", 103_728, 219_616),
        (r"^\p{L}{10}$", 520_528, 1_293_008),
        (r"^\p{Lu}{1,50}$", 1_406_800, 3_406_320),
        (r"^(\p{Lu}\s){5}$", 584_880, 595_552),
        (r"^(?i)[a-z]{1,50}$", 28_528, 81_440),
        (r"^(?=.*\d).{8,64}$", 99_440, 360_864),
        (r"^[^@\s]+@[^@\s]+\.[^@\s]+$", 16_448, 55_056),
        (r"^\p{L}[\p{L} '-]{0,29}$", 1_550_048, 4_677_264),
        (r"^\S+$", 21_696, 35_472),
        (r"^\bfoo\b$", 18_224, 34_688),
        (r"^[\s\S]{1,50}$", 60_496, 196_160),
        (r"^.{1,200}$", 223_712, 1_069_104),
        (r"^(\w+\s){4,29}\w+$", 43_280, 221_056),
    ];
    for (p, compiled, with_9_threads) in patterns {
        let estimate = pattern_bytes(p);
        assert!(estimate >= compiled, "{p}: {estimate} < {compiled}");
        let estimate = with_caches(p, 9);
        assert!(
            estimate >= with_9_threads,
            "{p}: {estimate} < {with_9_threads}"
        );
    }
}

#[test]
fn a_schema_compiles_each_distinct_pattern_once() {
    let p = json!({"type": "string", "pattern": r"^\p{L}{1,20}$"});
    let one = estimate_for(&json!({"properties": {"a": p}}), 2);
    let props: Map<String, Value> = (0..100).map(|i| (format!("a{i}"), p.clone())).collect();
    let hundred = estimate_for(&json!({"properties": props}), 2);
    assert!(hundred < one + 100 * 2048, "{one} {hundred}");
    let keys =
        json!({"patternProperties": {r"^\p{L}{1,20}$": {}, "^x": {}}, "properties": {"a": p}});
    assert!(estimate_for(&keys, 2) < one + 64 * 1024);
}

#[test]
fn flags_and_odd_patterns_are_read_without_panicking() {
    // `(?i)` applies to the rest: it must not hide it.
    assert!(pattern_bytes(r"(?i)\p{L}{1,10}") >= 10 * 56 * 1024);
    assert!(pattern_bytes(r"(?i)[a-z]{50}") > pattern_bytes(r"[a-z]{50}"));
    for p in [
        "",
        "(",
        ")",
        "[",
        "]",
        "\\",
        "{",
        "}",
        "(?",
        "(?<",
        "(?P<x",
        "(?i",
        "[^",
        "\\p",
        "\\p{",
        "a{99999999999999999999999}",
        "(((((((",
        ")))))",
        "[\\",
        "a**",
        "(?<=a)b",
        "(a)\\1",
    ] {
        let _ = pattern_bytes(p);
    }
    // Linear in the pattern's length, unclosed braces included: quadratic
    // work on these 900 KB would take minutes, linear takes milliseconds
    // (the bound leaves room for a debug build on a loaded machine).
    let unclosed = "\\p{".repeat(100_000) + &"\\u{".repeat(100_000) + &"(?<".repeat(100_000);
    let started = std::time::Instant::now();
    assert!(pattern_bytes(&unclosed) > 0);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // Nested repetitions saturate instead of overflowing.
    let huge = "(((((((a{1000}){1000}){1000}){1000}){1000}){1000}){1000})";
    assert_eq!(pattern_bytes(huge), u64::MAX);
    assert_eq!(super::weight(&json!({"pattern": huge})), u32::MAX);
}
