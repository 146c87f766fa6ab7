//! Unit tests of `format`.

use serde_json::json;

use super::*;

fn of(v: Value) -> Result<Option<Value>, String> {
    schema(v.as_object().unwrap()).map_err(|e| e.to_string())
}

#[test]
fn either_field_gives_the_schema() {
    let s = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let f = json!({"type": "json_schema", "schema": s});
    assert_eq!(of(json!({"output_format": f})), Ok(Some(s.clone())));
    assert_eq!(
        of(json!({"output_config": {"effort": "low", "format": f}})),
        Ok(Some(s))
    );
    assert_eq!(of(json!({"output_config": {"effort": "low"}})), Ok(None));
    assert_eq!(
        of(json!({"output_format": null, "output_config": {"format": null}})),
        Ok(None)
    );
}

#[test]
fn malformed_formats_are_refused() {
    let s = json!({"type": "object"});
    let f = json!({"type": "json_schema", "schema": s});
    let both = of(json!({"output_format": f, "output_config": {"format": f}}));
    assert!(both.unwrap_err().contains("both"));
    for (v, want) in [
        (
            json!({"output_format": "json"}),
            "output_format: Input should be an object",
        ),
        (
            json!({"output_config": {"format": {"type": "json_object"}}}),
            "output_config.format.type: Input should be 'json_schema'",
        ),
        (
            json!({"output_format": {"schema": s}}),
            "output_format.type: Field required",
        ),
        (
            json!({"output_format": {"type": "json_schema"}}),
            "output_format.schema: Field required",
        ),
        (
            json!({"output_format": {"type": "json_schema", "schema": "x"}}),
            "output_format.schema: Input should be a JSON Schema object",
        ),
    ] {
        assert_eq!(of(v.clone()), Err(want.to_string()), "{v}");
    }
}

#[test]
fn the_translated_body_carries_the_schema_as_format() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
        "required": ["name"], "additionalProperties": false});
    let format = json!({"type": "json_schema", "schema": schema});
    let ask = json!([{"role": "user", "content": "Who?"}]);
    let translate = |v: Value| super::super::translate(v.as_object().unwrap());
    for v in [
        json!({"model": "m", "max_tokens": 8, "messages": ask,
            "output_config": {"format": format, "effort": "low"}}),
        json!({"model": "m", "max_tokens": 8, "messages": ask, "output_format": format}),
    ] {
        let t = translate(v).unwrap();
        assert_eq!(t.body["format"], schema);
    }
    let t = translate(json!({"model": "m", "max_tokens": 8, "messages": ask})).unwrap();
    assert!(!t.body.contains_key("format"));
    let e = translate(json!({"model": "m", "max_tokens": 8, "messages": ask,
        "output_format": {"type": "json_object"}}));
    assert_eq!(
        e.err().map(|e| e.to_string()).as_deref(),
        Some("output_format.type: Input should be 'json_schema'")
    );
}
