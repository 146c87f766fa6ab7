//! Budget tests: real schemas fit, every kind of blow-up is refused early.

use serde_json::{Value, json};

use super::{BudgetError, Limits, check, pattern_cost};

/// `levels` levels, each an `anyOf` of two `$ref`s to the next.
pub(crate) fn fan_out(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/L{}", i + 1);
        defs.insert(
            format!("L{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("L{levels}"), json!({"type": "string"}));
    json!({"$defs": defs, "$ref": "#/$defs/L0"})
}

fn limits() -> Limits {
    Limits::default()
}

fn err(schema: &Value) -> BudgetError {
    match check(schema, &limits()) {
        Ok(r) => panic!("accepted {schema}: {r:?}"),
        Err(e) => e,
    }
}

#[test]
fn every_fixture_schema_fits() {
    let text = include_str!("../../../tests/fixtures/formats/schemas.json");
    let cases: Vec<Value> = serde_json::from_str(text).unwrap();
    // These two refer to schemas that are not there (remote, or nested
    // `$defs` a `#/$defs/…` pointer does not reach).
    let unresolvable = ["remote_ref", "nested_defs"];
    for c in &cases {
        let name = c["name"].as_str().unwrap();
        match check(&c["schema"], &limits()) {
            Ok(r) => assert!(r.expanded < 500 && r.depth < 16, "{name}: {r:?}"),
            Err(BudgetError::Unresolvable { .. }) if unresolvable.contains(&name) => {}
            Err(e) => panic!("{name}: {e}"),
        }
    }
    let text = include_str!("../../../tests/fixtures/tools/odd_tools.json");
    let tools: Vec<Value> = serde_json::from_str(text).unwrap();
    for t in &tools {
        let Some(p) = t.pointer("/function/parameters") else {
            continue;
        };
        match check(p, &limits()) {
            Ok(_) => {}
            Err(BudgetError::Unresolvable { .. }) => {
                assert_eq!(t["function"]["name"], "remote_ref")
            }
            Err(e) => panic!("{t}: {e}"),
        }
    }
}

#[test]
fn ref_fan_out_is_refused_quickly_at_any_depth() {
    for levels in [20, 40, 1000] {
        let start = std::time::Instant::now();
        assert_eq!(
            err(&fan_out(levels)),
            BudgetError::TooExpanded { limit: 20_000 },
            "{levels}"
        );
        assert!(start.elapsed() < std::time::Duration::from_millis(500));
    }
    assert_eq!(
        err(&fan_out(20)).to_string(),
        "too large: expands to more than 20000 sub-schemas (limit)"
    );
    // Ten levels expand to about 3000 sub-schemas: within the budget.
    let r = check(&fan_out(10), &limits()).unwrap();
    assert!(r.expanded > 2000 && r.expanded < 20_000, "{r:?}");
    assert!(!r.recursive);
}

#[test]
fn raw_size_and_nesting_are_bounded() {
    let wide: Value = (0..60_000).map(|i| json!(i)).collect();
    let e = err(&json!({"enum": wide}));
    assert_eq!(e, BudgetError::TooManyNodes { limit: 50_000 });
    let long = "x".repeat(600 * 1024);
    assert_eq!(
        err(&json!({"description": long})),
        BudgetError::TooManyBytes { limit: 512 * 1024 }
    );
    let mut deep = json!({"type": "string"});
    for _ in 0..70 {
        deep = json!({"type": "array", "items": deep});
    }
    assert!(matches!(err(&deep), BudgetError::TooDeep { limit: 64, .. }));
    let mut deeper = json!(1);
    for _ in 0..200 {
        deeper = json!([deeper]);
    }
    assert!(matches!(
        err(&json!({"const": deeper})),
        BudgetError::TooDeep { limit: 128, .. }
    ));
    // A chain of references is as deep as the nesting it stands for.
    let mut defs = serde_json::Map::new();
    for i in 0..5000 {
        defs.insert(
            format!("D{i}"),
            json!({"$ref": format!("#/$defs/D{}", i + 1)}),
        );
    }
    defs.insert("D5000".into(), json!({"type": "integer"}));
    let chain = json!({"$defs": defs, "$ref": "#/$defs/D0"});
    match err(&chain) {
        BudgetError::TooDeep { at, .. } => assert!(at.starts_with("/$defs/D"), "{at}"),
        other => panic!("{other}"),
    }
}

#[test]
fn nested_any_of_of_a_megabyte_is_refused_by_size() {
    let mut s = json!({"type": "string"});
    let mut n = 0;
    while s.to_string().len() < 1_000_000 && n < 60 {
        let alts: Vec<Value> = (0..3)
            .map(|i| json!({"description": i, "anyOf": [s.clone()]}))
            .collect();
        s = json!({"anyOf": alts});
        n += 1;
    }
    assert!(check(&s, &limits()).is_err());
}

#[test]
fn references_must_resolve() {
    let e = err(&json!({"properties": {"a": {"$ref": "#/$defs/none"}}}));
    assert_eq!(
        e.to_string(),
        "invalid: $ref \"#/$defs/none\" at /properties/a resolves to nothing in the schema"
    );
    err(&json!({"$ref": "https://example.com/remote.json"}));
    // Anchors, `$id`s and escaped pointers resolve.
    let ok = json!({
        "$id": "https://example.com/root.json",
        "$defs": {"a b": {"$anchor": "ab", "type": "string"}, "c/d": {"type": "integer"}},
        "properties": {
            "x": {"$ref": "#ab"},
            "y": {"$ref": "https://example.com/root.json#/$defs/a%20b"},
            "z": {"$ref": "#/$defs/c~1d"},
            "w": {"$ref": "root.json"}
        }
    });
    assert!(check(&ok, &limits()).is_ok(), "{:?}", check(&ok, &limits()));
}

#[test]
fn recursion_that_descends_is_accepted() {
    for s in [
        // A tree.
        json!({"$defs": {"N": {"type": "object", "properties": {
            "left": {"$ref": "#/$defs/N"}, "right": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}),
        // Any JSON value: its alternatives recurse into different parts.
        json!({"$defs": {"J": {"anyOf": [
            {"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/J"}},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/J"}}]}}, "$ref": "#/$defs/J"}),
        // A linked list through a nullable alternative.
        json!({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}}),
        // A tuple head and the rest.
        json!({"prefixItems": [{"$ref": "#"}], "items": {"$ref": "#"}}),
        // Named children next to "any other property".
        json!({"properties": {"a": {"$ref": "#"}}, "additionalProperties": {"$ref": "#"}}),
    ] {
        let r = check(&s, &limits()).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(r.recursive, "{s}");
    }
}

#[test]
fn recursion_through_overlapping_alternatives_is_refused() {
    for s in [
        json!({"$defs": {"T": {"type": "object", "properties": {
            "a": {"anyOf": [{"$ref": "#/$defs/T"}, {"$ref": "#/$defs/T"}]}}}}, "$ref": "#/$defs/T"}),
        json!({"properties": {"a": {"$ref": "#"}}, "patternProperties": {"^a": {"$ref": "#"}}}),
        json!({"properties": {"a": {"$ref": "#"}}, "allOf": [{"properties": {"a": {"$ref": "#"}}}]}),
        json!({"items": {"$ref": "#"}, "contains": {"$ref": "#"}}),
        json!({"$defs": {
            "A": {"anyOf": [{"$ref": "#/$defs/B"}, {"$ref": "#/$defs/C"}]},
            "B": {"properties": {"x": {"$ref": "#/$defs/A"}}},
            "C": {"properties": {"x": {"$ref": "#/$defs/A"}}}}, "$ref": "#/$defs/A"}),
    ] {
        match err(&s) {
            BudgetError::OverlappingRecursion { .. } => {}
            other => panic!("{s}: {other}"),
        }
    }
}

#[test]
fn cycles_that_never_descend_are_refused() {
    for s in [
        json!({"$ref": "#"}),
        json!({"allOf": [{"$ref": "#"}]}),
        json!({"anyOf": [{"$ref": "#"}, {"type": "string"}]}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
    ] {
        assert!(matches!(err(&s), BudgetError::EmptyCycle { .. }), "{s}");
    }
}

#[test]
fn patterns_are_priced_by_what_they_compile_to() {
    assert!(pattern_cost("^[a-z]+$") < 10);
    assert!(pattern_cost("^\\d{5}(-\\d{4})?$") < 20);
    assert!(pattern_cost("a{1000000}") >= 1_000_000);
    assert!(pattern_cost("(a{100}){100}") >= 10_000);
    assert!(pattern_cost("((((a{1000}){1000}){1000}){1000})") >= 1_000_000_000_000);
    // Each group: 100,000 copies of `a` and its two capture states.
    assert_eq!(
        pattern_cost(&"(".repeat(8).replace('(', "(a{100000})")),
        100_002 * 8
    );
    assert!(pattern_cost("\\p{L}{2,300}") >= 10_000);
    // Broken patterns are priced, not refused: compiling finds them.
    for p in [
        "(",
        ")",
        "[",
        "{",
        "a{",
        "\\",
        "a{2,1}",
        "(?",
        "x{99999999999999999999}",
    ] {
        let _ = pattern_cost(p);
    }
    let e = err(&json!({"type": "string", "pattern": "a{1000000}"}));
    assert_eq!(
        e,
        BudgetError::PatternTooCostly {
            limit: 10_000,
            at: "/".into()
        }
    );
    let many: serde_json::Map<String, Value> = (0..200)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "string", "pattern": "^[a-z]{1,500}$"}),
            )
        })
        .collect();
    assert_eq!(
        err(&json!({"properties": many})),
        BudgetError::PatternsTooCostly { limit: 50_000 }
    );
}

#[test]
fn tool_sets_add_up() {
    let one = check(&fan_out(10), &limits()).unwrap();
    let mut sum = super::Report::default();
    for _ in 0..20 {
        sum.add(&one);
    }
    assert!(sum.within(&limits().for_tool_set()).is_err());
    assert!(one.within(&limits().for_tool_set()).is_ok());
}
