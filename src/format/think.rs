//! Thinking emulation for models without the "thinking" capability.
//!
//! With `think: true`, augur constrains the answer to
//! `{"reasoning": string, "answer": …}` with the reasoning field first, so
//! the model writes its reasoning before the answer. [`split_think`] takes the
//! two apart again.

use serde_json::{Map, Value, json};

/// Field holding the emulated thinking text (generated first).
pub(crate) const REASONING_FIELD: &str = "reasoning";
/// Field holding the answer proper.
pub(crate) const ANSWER_FIELD: &str = "answer";
/// Bound on the reasoning text; also stops run-on strings. Stays well below
/// the grammar engine's repetition limit (2000).
pub(crate) const REASONING_MAX_LENGTH: u64 = 1500;

/// Added to the tool instruction when thinking is emulated with tools.
pub(crate) const TOOLS_NOTE: &str =
    "\nFirst think step by step in \"reasoning\", then put your reply in \"answer\".";

/// The schema asked for when emulating thinking. `answer` is the schema of
/// the answer field (pass the sanitized client schema for the grammar, the
/// original one for validation); `None` = a plain string answer.
pub(crate) fn think_schema(answer: Option<&Value>) -> Value {
    let answer = answer.cloned().unwrap_or_else(|| json!({"type": "string"}));
    let mut props = Map::new();
    props.insert(
        REASONING_FIELD.into(),
        json!({"type": "string", "maxLength": REASONING_MAX_LENGTH}),
    );
    props.insert(ANSWER_FIELD.into(), answer);
    json!({
        "type": "object",
        "properties": Value::Object(props),
        "required": [REASONING_FIELD, ANSWER_FIELD],
        "additionalProperties": false
    })
}

/// `$id` given to the client's schema inside [`validation_schema`].
const ANSWER_ID: &str = "urn:augur:answer";

/// [`think_schema`] to validate against: the client's schema embedded as a
/// resource of its own (an `$id`), so its `$ref`s (`#/$defs/…`, `#`) still
/// resolve against it rather than against the wrapper.
pub(crate) fn validation_schema(answer: Option<&Value>) -> Value {
    let answer = answer.map(|a| match a {
        Value::Object(m) if !m.contains_key("$id") && !m.contains_key("id") => {
            let mut m = m.clone();
            m.insert("$id".into(), json!(ANSWER_ID));
            Value::Object(m)
        }
        other => other.clone(),
    });
    think_schema(answer.as_ref())
}

/// Split an emulated-thinking value into (thinking, answer). `None` when
/// `value` is not an object with a string reasoning field and an answer.
pub(crate) fn split_think(value: &Value) -> Option<(String, Value)> {
    let m = value.as_object()?;
    let thinking = m.get(REASONING_FIELD)?.as_str()?.to_string();
    let answer = m.get(ANSWER_FIELD)?.clone();
    Some((thinking, answer))
}

/// The answer as message content: a string answer verbatim, anything else
/// serialized as JSON.
pub(crate) fn answer_text(answer: &Value) -> String {
    match answer {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "think_tests.rs"]
mod tests;
