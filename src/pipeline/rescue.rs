//! Calls a native-tools model wrote as text (policy
//! `tools.rescue_text_calls`): Ollama's per-model parser sometimes misses
//! a call and hands it back as `content` — `<tool_call>{…}</tool_call>`,
//! a Python call, a `tool_code` block ([`crate::tools::text`]). When an
//! answer has no `tool_calls` but its content holds calls to declared
//! tools, augur returns them as real `tool_calls` and removes them from
//! the content.
//!
//! The request goes upstream as the client sent it (its own bytes on
//! Ollama's routes); only the answer is read. A block's calls are checked
//! against their tools' schemas and repaired like emulated calls; a block
//! with a call still invalid after repair stays in the content as the
//! model wrote it, so a rescue never makes an answer worse than the
//! upstream's own. A rescue is never retried (a whole answer's native
//! calls are checked, repaired and retried: [`super::native`]), and no
//! fallback model answers:
//! the request is the client's own, with tools a fallback model may not
//! take natively (the upstream failover still applies). Rescues are
//! reported as the repair `text_tool_call` and counted in
//! `augur_text_calls_rescued_total{outcome}` (`rescued`, `invalid`).
//!
//! ```text
//! whole:  answer = upstream(request)
//!         no tool_calls, calls in content? -> content minus calls, tool_calls
//!         native calls checked, repaired, retried: see [`super::native`]
//! stream: see [`super::rescue_stream`]
//! ```

use bytes::Bytes;
use serde_json::Value;

use crate::{
    error::ProxyError,
    tools::{self, ToolCall, ToolSet, text},
};

use super::{checks, flows::Job, output::Output};

/// The repair reported for a rescue.
pub const TEXT_TOOL_CALL: &str = "text_tool_call";

/// Run a native-tools request whose answer may hold calls written as
/// text; `raw`: the client's own bytes, sent instead of `job.body`.
pub async fn run(
    job: Job,
    (set, checks): (ToolSet, super::native::Checks),
    raw: Option<Bytes>,
    stream: bool,
) -> Result<Output, ProxyError> {
    if stream {
        return super::rescue_stream::run(job, (set, checks), raw).await;
    }
    let path = job.route.path();
    let mut response = match raw {
        Some(bytes) => job.ctx.json_raw(path, bytes).await?,
        None => job.ctx.json(path, &Value::Object(job.body.clone())).await?,
    };
    let repairs = rescue_message(&mut response, &set, &job);
    let settled = super::native::settle(&job, &set, checks, response).await?;
    let mut report = settled.report;
    report.repaired.splice(0..0, repairs);
    Ok(Output::Full {
        value: settled.response,
        headers: report.headers(),
    })
}

/// Rescue the calls in a whole answer's `message.content`; the repairs
/// made (empty when nothing was rescued).
fn rescue_message(response: &mut Value, set: &ToolSet, job: &Job) -> Vec<String> {
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
pub(super) fn has_calls(tool_calls: Option<&Value>) -> bool {
    tool_calls
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
}

/// A block's calls checked (and repaired) against their tools' schemas:
/// all of them with the repairs made, or `None` when one stays invalid.
pub(super) fn admit(
    set: &ToolSet,
    block: Vec<ToolCall>,
    job: &Job,
) -> Option<(Vec<ToolCall>, Vec<String>)> {
    let count = block.len() as u64;
    let mut admitted = Vec::with_capacity(block.len());
    let mut repairs = Vec::new();
    for mut call in block {
        let mut violations = checks::check_call(set, &call);
        if !violations.is_empty() && job.validate.repair {
            let mut candidate = call.clone();
            let repaired = checks::repair_call(set, &mut candidate);
            let after = checks::check_call(set, &candidate);
            if after.len() < violations.len() {
                repairs.extend(repaired);
                violations = after;
                call = candidate;
            }
        }
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
