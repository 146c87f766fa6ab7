//! Calls a native-tools model wrote as text, read out of its answer's
//! content and checked against the declared tools (see [`super`]).

use serde_json::Value;

use crate::tools::{self, ToolCall, ToolSet, text};

use super::super::{checks, job::Job};

/// The repair reported for a rescue.
pub(crate) const TEXT_TOOL_CALL: &str = "text_tool_call";

/// Rescue the calls in a whole answer's `message.content`; the repairs
/// made (empty when nothing was rescued).
pub(crate) fn rescue_message(response: &mut Value, set: &ToolSet, job: &Job) -> Vec<String> {
    let Some(Value::Object(message)) = response.get_mut("message") else {
        return Vec::new();
    };
    if has_calls(message.get("tool_calls")) {
        return Vec::new();
    }
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut stream = text::TextStream::new(set);
    let mut events = stream.feed(content);
    events.extend(stream.finish());
    let mut kept = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut repairs = Vec::new();
    for event in events {
        match event {
            text::TextEvent::Text(t) => kept.push_str(&t),
            text::TextEvent::Unparsed { raw, .. } => kept.push_str(&raw),
            text::TextEvent::Calls { calls: block, raw } => match admit(set, block, job) {
                Some((admitted, repaired)) => {
                    calls.extend(admitted);
                    repairs.extend(repaired);
                }
                None => kept.push_str(&raw),
            },
        }
    }
    if calls.is_empty() {
        return Vec::new();
    }
    message.insert("content".into(), Value::String(kept.trim().to_string()));
    message.insert("tool_calls".into(), tools::ollama_tool_calls(&calls, 0));
    let mut out = vec![TEXT_TOOL_CALL.to_string()];
    out.extend(repairs);
    out
}

/// Whether `tool_calls` holds at least one call.
pub(crate) fn has_calls(tool_calls: Option<&Value>) -> bool {
    tool_calls
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
}

/// A block's calls checked (and repaired) against their tools' schemas:
/// all of them with the repairs made, or `None` when one stays invalid.
pub(crate) fn admit(
    set: &ToolSet,
    block: Vec<ToolCall>,
    job: &Job,
) -> Option<(Vec<ToolCall>, Vec<String>)> {
    let count = block.len() as u64;
    let mut admitted = Vec::with_capacity(block.len());
    let mut repairs = Vec::new();
    for call in block {
        let (call, violations, repaired) = checks::checked_call(set, call, job.validate.repair);
        repairs.extend(repaired);
        if !violations.is_empty() {
            tracing::info!(
                tool = %call.name,
                violations = %checks::describe(&violations),
                "a call written as text is invalid; left in the content"
            );
            metrics::counter!("augur_text_calls_rescued_total", "outcome" => "invalid")
                .increment(count);
            return None;
        }
        admitted.push(call);
    }
    metrics::counter!("augur_text_calls_rescued_total", "outcome" => "rescued")
        .increment(admitted.len() as u64);
    if let Some(audit) = &job.audit {
        for call in &admitted {
            audit.record(call, "rescued");
        }
    }
    Some((admitted, repairs))
}
