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
#[path = "format_tests.rs"]
mod tests;
