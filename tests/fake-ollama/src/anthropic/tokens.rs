//! The input tokens `message_start` reports: Ollama's estimate from the request, since the
//! real count is only known when the answer is done.

use serde_json::{Map, Value, json};

use crate::surface;
use crate::wire::go_json;

/// `EstimateInputTokens`: a quarter of the length of the system prompt, the roles, the text
/// and thinking of every block (and the JSON of tool blocks), and the tools' names,
/// descriptions and schemas; at least 1.
pub fn estimate(system: Option<&Value>, params: &[(String, Vec<Value>)], tools: &[Value]) -> u64 {
    let mut total = match system {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) => s.len(),
        Some(Value::Array(items)) => items.iter().map(block_len).sum(),
        Some(other) => go_json(other).len(),
    };
    for (role, blocks) in params {
        total += role.len() + blocks.iter().map(block_len).sum::<usize>();
    }
    for t in tools {
        let s = |k: &str| t.get(k).and_then(Value::as_str).map_or(0, str::len);
        let schema = t.get("input_schema").filter(|s| !s.is_null());
        total += s("name") + s("description") + schema.map_or(0, |v| v.to_string().len());
    }
    let tokens = total / 4;
    let any = !params.is_empty() || system.is_some_and(|s| !s.is_null());
    (if tokens == 0 && any { 1 } else { tokens }) as u64
}

/// `countContentBlock`: text and thinking lengths, and the marshalled length of tool blocks.
fn block_len(b: &Value) -> usize {
    let s = |k: &str| b.get(k).and_then(Value::as_str);
    let mut n = s("text").map_or(0, str::len) + s("thinking").map_or(0, str::len);
    let kind = s("type").unwrap_or("");
    if kind == "tool_use" || kind == "tool_result" {
        // The Go struct's field order, empty fields omitted, `content` as a Go `any`.
        let mut v = Map::new();
        v.insert("type".into(), json!(kind));
        for (k, sorted) in [
            ("text", false),
            ("id", false),
            ("name", false),
            ("input", false),
            ("tool_use_id", false),
            ("content", true),
            ("is_error", false),
            ("thinking", false),
        ] {
            match b.get(k) {
                None | Some(Value::Null) => {}
                // `omitempty` strings; `text` and `thinking` are pointers, `content` an `any`.
                Some(Value::String(x))
                    if x.is_empty() && ["id", "name", "tool_use_id"].contains(&k) => {}
                Some(Value::Bool(false)) => {}
                Some(x) if sorted => _ = v.insert(k.into(), surface::go_map(x.clone())),
                Some(x) => _ = v.insert(k.into(), x.clone()),
            }
        }
        n += go_json(&v).len();
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_like_ollama() {
        let text = vec![(
            "user".to_owned(),
            vec![json!({"type": "text", "text": "hello world"})],
        )];
        let tools = [
            json!({"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}),
        ];
        // (4 + 11 + 11 + 7 + 17) / 4
        assert_eq!(estimate(None, &text, &tools), 12);
        assert_eq!(estimate(Some(&json!("")), &[], &[]), 1);
        let call = json!({"type": "tool_use", "id": "c1", "name": "f", "input": {"a": "<"}, "cache_control": {}});
        let marshalled = r#"{"type":"tool_use","id":"c1","name":"f","input":{"a":"\u003c"}}"#;
        assert_eq!(block_len(&call), marshalled.len());
        let result = json!({"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "ok"}]});
        let marshalled =
            r#"{"type":"tool_result","tool_use_id":"c1","content":[{"text":"ok","type":"text"}]}"#;
        assert_eq!(block_len(&result), marshalled.len());
    }
}
