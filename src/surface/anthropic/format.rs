//! Anthropic's structured outputs: `output_config.format` (and the beta's
//! top-level `output_format`, which the SDKs before `output_config` sent),
//! `{"type": "json_schema", "schema": {...}}`. Ollama's Anthropic layer
//! ignores both; augur runs the schema as the pipeline's `format`, so the
//! answer (a text block holding the JSON) is validated, repaired and
//! retried as on Ollama's own routes.

use serde_json::{Map, Value};

use crate::error::ProxyError;

use super::fields::bad;

/// The JSON Schema a request asks the answer to follow, if any. Refused
/// (400): both fields given, or a format that is not a `json_schema` with
/// a schema object.
pub(super) fn schema(req: &Map<String, Value>) -> Result<Option<Value>, ProxyError> {
    let beta = req.get("output_format").filter(|v| !v.is_null());
    let config = req
        .get("output_config")
        .and_then(|c| c.get("format"))
        .filter(|v| !v.is_null());
    match (beta, config) {
        (Some(_), Some(_)) => Err(bad(
            "output_format and output_config.format were both given: use only output_config.format (output_format is deprecated)",
        )),
        (Some(f), None) => json_schema(f, "output_format").map(Some),
        (None, Some(f)) => json_schema(f, "output_config.format").map(Some),
        (None, None) => Ok(None),
    }
}

/// The schema of one `JSONOutputFormat` (`field` names it in errors).
fn json_schema(format: &Value, field: &str) -> Result<Value, ProxyError> {
    let Value::Object(format) = format else {
        return Err(bad(format!("{field}: Input should be an object")));
    };
    match format.get("type") {
        Some(Value::String(t)) if t == "json_schema" => {}
        Some(_) => {
            return Err(bad(format!("{field}.type: Input should be 'json_schema'")));
        }
        None => return Err(bad(format!("{field}.type: Field required"))),
    }
    match format.get("schema") {
        Some(s @ Value::Object(_)) => Ok(s.clone()),
        Some(_) => Err(bad(format!(
            "{field}.schema: Input should be a JSON Schema object"
        ))),
        None => Err(bad(format!("{field}.schema: Field required"))),
    }
}

#[cfg(test)]
mod tests {
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
}
