//! Thinking emulation (placeholder).
use serde_json::{Value, json};

pub fn think_schema(answer: Option<&Value>, json_answer: bool) -> Value {
    let answer = match (answer, json_answer) {
        (Some(a), _) => a.clone(),
        (None, true) => json!({"type": "object"}),
        (None, false) => json!({"type": "string"}),
    };
    json!({"type":"object","properties":{"reasoning":{"type":"string"},"answer":answer},"required":["reasoning","answer"]})
}

pub fn split_think(v: &Value) -> Option<(String, Value)> {
    Some((
        v.get("reasoning")?.as_str()?.to_string(),
        v.get("answer")?.clone(),
    ))
}
