//! Sanitizer tests over `tests/fixtures/formats/schemas.json`, with a checker
//! mirroring what llama.cpp's converters reject.

use serde_json::{Value, json};

use super::{FormatForms, MAX_VISITS, degrade, sanitize, sanitize_with};

/// The seven JSON Schema primitive types.
const PRIMITIVES: [&str; 7] = [
    "string", "number", "integer", "boolean", "null", "array", "object",
];

fn fixtures() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/formats/schemas.json"
    );
    let text = std::fs::read_to_string(path).expect("fixture file");
    serde_json::from_str(&text).expect("fixture JSON")
}

const FORMATS: [&str; 9] = [
    "date",
    "time",
    "date-time",
    "uuid",
    "uuid1",
    "uuid2",
    "uuid3",
    "uuid4",
    "uuid5",
];
const BANNED: [&str; 12] = [
    "$ref",
    "$defs",
    "definitions",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "prefixItems",
    "nullable",
    "const_",
];

/// Escapes GBNF accepts after the converter copies them verbatim.
fn pattern_ok(p: &str) -> Result<(), String> {
    if !(p.starts_with('^') && p.ends_with('$')) || p.len() < 2 {
        return Err(format!("unanchored pattern {p}"));
    }
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' {
            let n = chars.get(i + 1).copied().unwrap_or(' ');
            if !"xuUtrn\\\"[]^$.()|{}*+?".contains(n) {
                return Err(format!("escape \\{n} in {p}"));
            }
            i += 2;
            continue;
        }
        if chars[i] == '(' && chars.get(i + 1) == Some(&'?') && chars.get(i + 2) != Some(&':') {
            return Err(format!("lookaround in {p}"));
        }
        i += 1;
    }
    Ok(())
}

fn count_ok(v: &Value) -> bool {
    v.as_u64().is_some_and(|n| n < 2000)
}

/// Every rule of the strictest converter generation.
pub(crate) fn check(v: &Value, path: &str, errs: &mut Vec<String>) {
    let Some(m) = v.as_object() else {
        errs.push(format!("{path}: not an object: {v}"));
        return;
    };
    for k in BANNED {
        if m.contains_key(k) {
            errs.push(format!("{path}: has {k}"));
        }
    }
    if let Some(t) = m.get("type")
        && !t.as_str().is_some_and(|t| PRIMITIVES.contains(&t))
    {
        errs.push(format!("{path}: bad type {t}"));
    }
    if let Some(a) = m.get("anyOf") {
        match a.as_array() {
            Some(xs) if !xs.is_empty() => {
                for (i, x) in xs.iter().enumerate() {
                    check(x, &format!("{path}/anyOf/{i}"), errs);
                }
            }
            _ => errs.push(format!("{path}: bad anyOf")),
        }
        if m.keys()
            .any(|k| !matches!(k.as_str(), "anyOf" | "description" | "title"))
        {
            errs.push(format!("{path}: keywords next to anyOf"));
        }
    }
    if let Some(e) = m.get("enum")
        && !e
            .as_array()
            .is_some_and(|e| !e.is_empty() && e.len() <= 256)
    {
        errs.push(format!("{path}: bad enum"));
    }
    let structural = ["type", "anyOf", "enum", "const"];
    if !structural.iter().any(|k| m.contains_key(*k)) {
        errs.push(format!("{path}: keyword-less schema {v}"));
    }
    if let Some(p) = m.get("pattern") {
        match p.as_str().map(pattern_ok) {
            Some(Ok(())) => {}
            Some(Err(e)) => errs.push(format!("{path}: {e}")),
            None => errs.push(format!("{path}: non-string pattern")),
        }
    }
    if let Some(f) = m.get("format")
        && !f.as_str().is_some_and(|f| FORMATS.contains(&f))
    {
        errs.push(format!("{path}: format {f}"));
    }
    for (lo, hi) in [("minLength", "maxLength"), ("minItems", "maxItems")] {
        for k in [lo, hi] {
            if let Some(c) = m.get(k)
                && !count_ok(c)
            {
                errs.push(format!("{path}: bad {k} {c}"));
            }
        }
        if let (Some(a), Some(b)) = (
            m.get(lo).and_then(Value::as_u64),
            m.get(hi).and_then(Value::as_u64),
        ) && a > b
        {
            errs.push(format!("{path}: {lo} > {hi}"));
        }
    }
    if m.get("type") == Some(&json!("integer")) {
        for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if let Some(b) = m.get(k)
                && !b.is_i64()
            {
                errs.push(format!("{path}: non-integer bound {k} {b}"));
            }
        }
    }
    if let Some(p) = m.get("properties") {
        match p.as_object() {
            Some(p) => {
                for (k, x) in p {
                    check(x, &format!("{path}/properties/{k}"), errs);
                }
            }
            None => errs.push(format!("{path}: bad properties")),
        }
    }
    if let Some(r) = m.get("required").and_then(Value::as_array) {
        let props = m.get("properties").and_then(Value::as_object);
        for n in r {
            if !n
                .as_str()
                .is_some_and(|n| props.is_some_and(|p| p.contains_key(n)))
            {
                errs.push(format!("{path}: required {n} not in properties"));
            }
        }
    }
    match m.get("additionalProperties") {
        None | Some(Value::Bool(_)) => {}
        Some(a) => check(a, &format!("{path}/additionalProperties"), errs),
    }
    match m.get("items") {
        None => {}
        Some(Value::Array(xs)) => {
            for (i, x) in xs.iter().enumerate() {
                check(x, &format!("{path}/items/{i}"), errs);
            }
        }
        Some(x) => check(x, &format!("{path}/items"), errs),
    }
}

fn checked(v: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    check(v, "", &mut errs);
    errs
}

#[test]
fn fixtures_sanitize_to_converter_safe_schemas() {
    let fx = fixtures();
    assert!(fx.len() >= 30);
    for f in &fx {
        let name = &f["name"];
        let s = sanitize(&f["schema"]).expect("sanitize");
        let errs = checked(&s.schema);
        assert!(errs.is_empty(), "{name}: {errs:?}\n{}", s.schema);
        if let Some(expect) = f.get("expect") {
            assert_eq!(&s.schema, expect, "{name}");
        }
        for want in f
            .get("changes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let want = want.as_str().unwrap_or_default();
            assert!(
                s.changes.iter().any(|c| c.contains(want)),
                "{name}: no change containing {want:?} in {:?}",
                s.changes
            );
        }
        // Sanitizing is idempotent and the result is a usable JSON Schema.
        let again = sanitize(&s.schema).expect("sanitize again");
        assert_eq!(again.schema, s.schema, "{name}: not idempotent");
        // Tuples use draft-7 `items: [...]`, as the converter expects.
        let compiled = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft7)
            .build(&s.schema);
        assert!(compiled.is_ok(), "{name}: does not compile");
    }
}

#[test]
fn degrade_steps_are_safe_and_terminate() {
    for f in fixtures() {
        let mut cur = f["schema"].clone();
        let mut steps = 0;
        while let Some(next) = degrade(&cur) {
            let errs = checked(&next);
            assert!(errs.is_empty(), "{}: {errs:?}", f["name"]);
            assert_ne!(next, cur);
            cur = next;
            steps += 1;
            assert!(steps <= 3, "{}: degrade does not terminate", f["name"]);
        }
    }
}

#[test]
fn degrade_drops_constraints_then_structure() {
    let s = json!({"type": "object", "properties": {
        "a": {"type": "string", "pattern": "^a+$", "maxLength": 5},
        "b": {"type": "object", "properties": {"c": {"type": "object", "properties": {"d": {"type": "integer", "minimum": 1}}}}},
        "e": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    }, "required": ["a"]});
    let step1 = degrade(&s).expect("step 1");
    assert_eq!(step1["properties"]["a"], json!({"type": "string"}));
    assert_eq!(
        step1["properties"]["e"]["anyOf"].as_array().map(Vec::len),
        Some(2)
    );
    let step2 = degrade(&step1).expect("step 2");
    assert_eq!(
        step2["properties"]["b"]["properties"]["c"],
        json!({"type": "object"})
    );
    assert_eq!(step2["properties"]["e"], super::types::any_value());
    assert_eq!(degrade(&step2), None);
    assert_eq!(degrade(&json!({"type": "object"})), None);
}

#[test]
fn roots_that_are_not_schemas_fail() {
    for bad in [json!(1), json!("x"), json!([1]), json!(null)] {
        assert!(sanitize(&bad).is_err());
    }
    assert_eq!(
        sanitize(&json!(true)).map(|s| s.schema),
        Ok(super::types::any_value())
    );
}

#[test]
fn sanitized_schema_still_accepts_valid_output() {
    // Output that satisfies the sanitized grammar's schema satisfies the original.
    let typical = &fixtures()[0]["schema"];
    let s = sanitize(typical).expect("sanitize").schema;
    let good = json!({"items": [{"n": 1}], "tag": "xabbx"});
    assert!(
        jsonschema::validator_for(&s)
            .map(|v| v.is_valid(&good))
            .unwrap_or(false)
    );
}

/// Schemas within the budget that make the rewrite do more than its input:
/// keywords next to `anyOf` copied into every branch at every level, and
/// recursion unrolled.
fn amplifying() -> Vec<Value> {
    let mut out = Vec::new();
    for (levels, branches, props) in [(6, 2, 40), (4, 4, 60), (2, 30, 200), (1, 300, 60)] {
        let mut defs = serde_json::Map::new();
        defs.insert("L0".into(), json!({"type": "string"}));
        for level in 1..=levels {
            let p: serde_json::Map<String, Value> = (0..props)
                .map(|i| {
                    (
                        format!("p{level}_{i}"),
                        json!({"type": "string", "description": "x"}),
                    )
                })
                .collect();
            let alts: Vec<Value> = (0..branches)
                .map(|b| json!({"$ref": format!("#/$defs/L{}", level - 1), "title": format!("b{b}")}))
                .collect();
            defs.insert(format!("L{level}"), json!({"anyOf": alts, "properties": p}));
        }
        out.push(json!({"$defs": defs, "$ref": format!("#/$defs/L{levels}")}));
    }
    for width in [30, 200] {
        let node_props: serde_json::Map<String, Value> = (0..width)
            .map(|i| (format!("c{i}"), json!({"$ref": "#/$defs/N"})))
            .collect();
        out.push(json!({"$defs": {"N": {"type": "object", "properties": node_props}}, "$ref": "#/$defs/N"}));
    }
    out
}

#[test]
fn the_rewrite_is_bounded_by_its_visit_cap() {
    for s in amplifying() {
        assert!(crate::schema::budget::check(&s, &Default::default()).is_ok());
        let out = sanitize(&s).expect("sanitize");
        assert!(out.visits <= super::MAX_VISITS);
        // About 100 bytes per sub-schema rewritten at most.
        assert!(out.schema.to_string().len() < 150 * super::MAX_VISITS);
        let small = super::sanitize::sanitize_within(&s, 1000).expect("sanitize");
        assert!(small.visits <= 1000);
        assert!(small.schema.to_string().len() < 150_000);
        assert!(checked(&small.schema).is_empty());
    }
    let recursive = amplifying().pop().expect("schema");
    let cut = super::sanitize::sanitize_within(&recursive, 1000).expect("sanitize");
    assert!(
        cut.changes
            .iter()
            .any(|c| c.contains("too large for a grammar"))
    );
    assert!(cut.changes.len() <= 201);
}

#[test]
fn long_lists_are_rewritten_in_linear_time() {
    let names: Vec<Value> = (0..40_000).map(|i| json!(format!("n{i}"))).collect();
    let values: Vec<Value> = (0..20_000).map(|i| json!(i)).collect();
    let branches: Vec<Value> = (0..10_000).map(|i| json!({"const": i})).collect();
    let types: Vec<Value> = (0..20_000).map(|i| json!(format!("t{i}"))).collect();
    for s in [
        json!({"type": "object", "required": names}),
        json!({"allOf": [{"enum": values.clone()}, {"enum": values}]}),
        json!({"anyOf": branches}),
        json!({"allOf": [{"type": types.clone()}, {"type": types}]}),
    ] {
        assert!(crate::schema::budget::check(&s, &Default::default()).is_ok());
        let start = std::time::Instant::now();
        sanitize(&s).expect("sanitize");
        // Quadratic work here would take minutes.
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }
}

#[test]
fn the_common_forms_keep_required_strings_from_being_empty() {
    let schema = json!({"type": "object", "required": ["city", "unit", "code", "n"],
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["", "c"]},
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
            "n": {"type": "integer"},
            "note": {"type": "string"}}});
    let common = sanitize_with(&schema, MAX_VISITS, FormatForms::Common).unwrap();
    let p = &common.schema["properties"];
    assert_eq!(p["city"]["minLength"], 1, "{p}");
    for k in ["unit", "code", "n", "note"] {
        assert!(p[k].get("minLength").is_none(), "{k}: {p}");
    }
    // The defaults leave the grammar as the schema says.
    let exact = sanitize_with(&schema, MAX_VISITS, FormatForms::Exact).unwrap();
    assert!(
        exact.schema["properties"]["city"]
            .get("minLength")
            .is_none()
    );
}
