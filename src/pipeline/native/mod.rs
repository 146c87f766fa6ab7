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
//! calls are checked, repaired and retried: [`settle`]), and no
//! fallback model answers:
//! the request is the client's own, with tools a fallback model may not
//! take natively (the upstream failover still applies). Rescues are
//! reported as the repair `text_tool_call` and counted in
//! `augur_text_calls_rescued_total{outcome}` (`rescued`, `invalid`).
//!
//! ```text
//! whole:  answer = upstream(request)
//!         no tool_calls, calls in content? -> content minus calls, tool_calls
//!         native calls checked, repaired, retried: see [`settle`]
//! stream: see [`stream`]
//! ```

pub(crate) mod check;
pub(crate) mod gate;
pub(crate) mod markup;
pub(crate) mod recover;
pub(crate) mod settle;
pub(crate) mod stream;

use bytes::Bytes;
use serde_json::Value;

use crate::{error::ProxyError, tools::ToolSet};

use super::{confidence, job::Job, output::Output};

use markup::rescue_message;
pub(crate) use settle::Checks;

/// Run a native-tools request whose answer may hold calls written as
/// text; `raw`: the client's own bytes, sent instead of `job.body`.
pub(crate) async fn run(
    job: Job,
    (set, checks): (ToolSet, Checks),
    raw: Option<Bytes>,
    stream: bool,
) -> Result<Output, ProxyError> {
    if stream {
        return stream::run(job, (set, checks), raw).await;
    }
    let path = job.route.path();
    let mut response = match raw {
        Some(bytes) => job.ctx.json_raw(path, bytes).await?,
        None => job.ctx.json(path, &Value::Object(job.body.clone())).await?,
    };
    let repairs = match checks.text {
        true => rescue_message(&mut response, &set, &job),
        false => Vec::new(),
    };
    let settled = settle::settle(&job, &set, checks, response).await?;
    let mut report = settled.report;
    report.repaired.splice(0..0, repairs);
    let mut value = settled.response;
    let probs = job.ctx.probs;
    if probs.policy.is_some() {
        let tokens = confidence::tokens_of(&value);
        let scored = confidence::score_native(&tokens, &value);
        let model = job.body.get("model").and_then(Value::as_str).unwrap_or("");
        let span = job.ctx.timing.as_ref().map(|t| t.trace());
        confidence::observe(model, scored.as_ref(), "answered", span);
        (report.confidence, report.below) = probs.report(scored);
        probs.strip(&mut value);
    }
    Ok(Output::Full {
        value,
        headers: report.headers(),
    })
}
