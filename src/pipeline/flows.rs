//! Stages 6-9 for a transformed request: run it whole (validate, repair,
//! retry) or stream it, and shape the answer as Ollama would.

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    policy::{OnFailure, ValidatePolicy},
    tools,
    validate::Validators,
    wire::created_at_now,
};

use super::{
    attempts::{self, Completed, Expect, Seed},
    call::{CallCtx, Lines},
    checks,
    output::{self, Item, Output, Report},
    plan::Route,
};

/// How a streamed, validated answer is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// One JSON object.
    Whole,
    /// Held, validated, then sent as chunks.
    Buffered,
    /// Streamed as it comes; the outcome is reported in the done chunk.
    Pass,
    /// Streamed with incremental tool-call extraction.
    Tools,
    /// Streamed emulated thinking: thinking as it comes, then the answer.
    Think,
}

/// Everything a flow needs.
pub struct Job {
    pub ctx: CallCtx,
    pub route: Route,
    pub body: Map<String, Value>,
    pub expect: Expect,
    pub validate: ValidatePolicy,
    pub validators: Validators,
    pub emulated: Option<&'static str>,
    /// Where emulated tool calls are recorded, if the policy asks for it.
    pub audit: Option<Audit>,
    /// The models that answer when this one's answer fails (see
    /// [`super::fallback`]).
    pub fallback: Option<std::sync::Arc<super::fallback::Chain>>,
    /// The chain's next model: 0 for the requested model's job.
    pub position: usize,
    /// The fallback this job runs for, when it does.
    pub answered: Option<super::fallback::Answered>,
    /// Where fallback models take their concurrency slots, and the slot
    /// this job's fallback model holds.
    pub seat: super::fallback::Seat,
}

/// The JSONL audit of emulated tool calls for one request.
#[derive(Clone)]
pub struct Audit {
    pub log: crate::policy::AuditLog,
    pub policy: crate::policy::AuditPolicy,
    pub principal: String,
    pub model: String,
}

impl Audit {
    /// Record one call and its outcome ("valid", "repaired", "invalid").
    pub fn record(&self, call: &tools::ToolCall, outcome: &str) {
        self.log.record(
            &self.policy,
            &self.principal,
            &self.model,
            &call.name,
            outcome,
            Some(&call.arguments),
        );
    }
}

impl Job {
    /// Run to a whole, validated answer (with retries, and fallback
    /// models when the policy names them), shaped for the client; `seed`:
    /// a streamed attempt that failed first.
    pub async fn complete(&self, seed: Option<Seed>) -> Result<(Value, Report), ProxyError> {
        let outcome = self.attempt(seed).await;
        self.conclude(outcome).await
    }

    /// The answer for `outcome` of this job's attempts, or of its fallback
    /// models', shaped for the client (422 as the policy says).
    pub(super) async fn conclude(
        &self,
        outcome: Result<Completed, ProxyError>,
    ) -> Result<(Value, Report), ProxyError> {
        let (outcome, tried) = self.fall_back(outcome).await;
        let (value, mut report) = finalize(self, outcome?)?;
        report.fallback = tried.answered;
        report.fallback_failed = tried.failed;
        Ok((value, report))
    }

    /// The upstream's stream of this request's answer, opened on its own
    /// route (see [`Job::open_stream`] for the fallback models). A rejected
    /// schema is known before any byte is streamed: it is degraded and
    /// asked again.
    pub async fn open_lines(&self) -> Result<Lines, ProxyError> {
        let mut body = self.body.clone();
        body.insert("stream".into(), Value::Bool(true));
        let mut degrades = 0;
        loop {
            match self
                .ctx
                .lines(self.route.path(), &Value::Object(body.clone()))
                .await
            {
                Ok(lines) => return Ok(lines),
                Err(e) if attempts::degrade_after(&e, &self.validate, &mut body, &mut degrades) => {
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Nothing of the answer was sent yet: answer through the whole-answer
    /// path (repair, retries, fallback models) and send its chunks as
    /// `route` streams them, leaving out its thinking when thinking went
    /// out already. A fallback model that answered after the headers went
    /// out is named in the done chunk.
    pub async fn stream_complete(
        &self,
        route: Route,
        tx: &mpsc::Sender<Item>,
        sent_thinking: bool,
        seed: Option<Seed>,
    ) -> Result<(), ProxyError> {
        if tx.is_closed() {
            // The client has gone: nothing is asked again.
            return Ok(());
        }
        let whole = self.complete(seed).await?;
        self.send_whole(route, tx, sent_thinking, whole).await
    }

    /// Send a whole answer's chunks as `route` streams them (see
    /// [`Job::stream_complete`]).
    pub(super) async fn send_whole(
        &self,
        route: Route,
        tx: &mpsc::Sender<Item>,
        sent_thinking: bool,
        (value, report): (Value, Report),
    ) -> Result<(), ProxyError> {
        let mut chunks = chunks_of(route, &value);
        if let Some(done) = chunks.last_mut() {
            super::fallback::note_in_done(self, &report, done);
        }
        for chunk in chunks {
            if sent_thinking && is_thinking_only(&chunk) {
                continue;
            }
            if !output::send(tx, Ok(chunk)).await {
                break;
            }
        }
        Ok(())
    }
}

/// Run `job` and produce its output.
pub async fn run(job: Job, delivery: Delivery) -> Result<Output, ProxyError> {
    match delivery {
        Delivery::Whole => {
            let (value, report) = job.complete(None).await?;
            Ok(Output::Full {
                value,
                headers: report.headers(),
            })
        }
        Delivery::Buffered => {
            let (value, report) = job.complete(None).await?;
            let route = job.route;
            Ok(output::stream(report.headers(), |tx| async move {
                for chunk in chunks_of(route, &value) {
                    if !output::send(&tx, Ok(chunk)).await {
                        return;
                    }
                }
            }))
        }
        Delivery::Pass => super::stream_pass::run(job).await,
        Delivery::Tools => super::stream_tools::run(job).await,
        Delivery::Think => super::stream_think::run(job).await,
    }
}

/// The client-facing response for a completed run, or 422.
pub fn finalize(job: &Job, completed: Completed) -> Result<(Value, Report), ProxyError> {
    let validation_on = job.validate.enabled;
    if completed.invalid && validation_on && job.validate.on_failure == OnFailure::Error {
        metrics::counter!("augur_validation_rejected_total").increment(1);
        return Err(ProxyError::Unprocessable(failure_message(
            &job.expect,
            &completed,
        )));
    }
    if !completed.interp.repairs.is_empty() {
        metrics::counter!("augur_repairs_total").increment(1);
    }
    let report = Report {
        repaired: completed.interp.repairs.clone(),
        attempts: completed.attempts,
        invalid: completed.invalid && validation_on,
        unchecked: completed.interp.unchecked && validation_on,
        emulated: job.emulated,
        fallback: job.answered.clone(),
        fallback_failed: false,
    };
    if let Some(audit) = &job.audit {
        let outcome = match (completed.invalid, completed.interp.repairs.is_empty()) {
            (true, _) => "invalid",
            (false, false) => "repaired",
            (false, true) => "valid",
        };
        for call in &completed.interp.calls {
            audit.record(call, outcome);
        }
    }
    let value = shape(job.route, completed);
    Ok((value, report))
}

fn failure_message(expect: &Expect, completed: &Completed) -> String {
    let what = match (expect, completed.interp.calls.first()) {
        (Expect::Tools { .. }, Some(call)) => {
            format!("tool call {:?} has invalid arguments", call.name)
        }
        (Expect::Tools { .. }, None) => {
            "the model's answer is not a valid tool call or answer".to_string()
        }
        _ => "the model's answer does not match the requested format".to_string(),
    };
    format!(
        "{what} after {} attempt{}: {}",
        completed.attempts,
        if completed.attempts == 1 { "" } else { "s" },
        checks::describe(&completed.interp.violations)
    )
}

/// Put the interpreted answer into the upstream's final response object.
fn shape(route: Route, completed: Completed) -> Value {
    let Completed {
        response, interp, ..
    } = completed;
    let mut out = Map::new();
    let Value::Object(fields) = response else {
        return response;
    };
    // Complete calls closed off from a cut-off list answer the request:
    // the model was stopped while repeating itself, not mid-answer.
    let closed = !interp.calls.is_empty() && interp.repairs.iter().any(|r| r == "closed_truncated");
    let interp_done_reason_present = fields.contains_key("done_reason");
    for (key, value) in fields {
        match (route, key.as_str()) {
            (_, "done_reason") if closed => {
                out.insert(key, json!("stop"));
            }
            // Ollama answers `done: false` when it stopped a model that
            // repeated itself; the validated answer is complete.
            (_, "done") => {
                out.insert(key, json!(true));
                if !interp_done_reason_present {
                    out.insert("done_reason".into(), json!("stop"));
                }
            }
            (Route::Chat, "message") => {
                let mut message = Map::new();
                message.insert("role".into(), json!("assistant"));
                // Beside calls, only text mode's text around them.
                message.insert("content".into(), Value::String(interp.content.clone()));
                if let Some(t) = &interp.thinking {
                    message.insert("thinking".into(), Value::String(t.clone()));
                }
                if !interp.calls.is_empty() {
                    message.insert(
                        "tool_calls".into(),
                        tools::ollama_tool_calls(&interp.calls, 0),
                    );
                }
                out.insert(key, Value::Object(message));
            }
            (Route::Generate, "response") => {
                out.insert(key, Value::String(interp.content.clone()));
                if let Some(t) = &interp.thinking {
                    out.insert("thinking".into(), Value::String(t.clone()));
                }
            }
            (Route::Generate, "thinking") if interp.thinking.is_some() => {}
            _ => {
                out.insert(key, value);
            }
        }
    }
    Value::Object(out)
}

/// A whole response as the chunk sequence Ollama streams: thinking, then
/// content, then one chunk per tool call, then the done chunk.
pub fn chunks_of(route: Route, whole: &Value) -> Vec<Value> {
    let model = whole.get("model").cloned().unwrap_or(Value::Null);
    let mut chunks = Vec::new();
    let message = whole.get("message");
    let text_of = |k: &str| -> String {
        let v = match route {
            Route::Chat => message.and_then(|m| m.get(k)),
            Route::Generate => whole.get(if k == "content" { "response" } else { k }),
        };
        v.and_then(Value::as_str).unwrap_or_default().to_string()
    };
    let thinking = text_of("thinking");
    let content = text_of("content");
    if !thinking.is_empty() {
        chunks.push(delta_chunk(route, &model, "", Some(&thinking)));
    }
    if !content.is_empty() {
        chunks.push(delta_chunk(route, &model, &content, None));
    }
    if let Some(Value::Array(calls)) = message.and_then(|m| m.get("tool_calls")) {
        for call in calls {
            chunks.push(json!({
                "model": model,
                "created_at": created_at_now(),
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                "done": false,
            }));
        }
    }
    let mut done = whole.clone();
    if let Value::Object(fields) = &mut done {
        fields.insert("created_at".into(), json!(created_at_now()));
        fields.insert("done".into(), json!(true));
        if !fields.contains_key("done_reason") {
            fields.insert("done_reason".into(), json!("stop"));
        }
        match route {
            Route::Chat => {
                fields.insert(
                    "message".into(),
                    json!({"role": "assistant", "content": ""}),
                );
            }
            Route::Generate => {
                fields.insert("response".into(), json!(""));
                fields.remove("thinking");
            }
        }
    }
    chunks.push(done);
    chunks
}

/// Whether `chunk` is a `done: false` chunk carrying only thinking.
pub fn is_thinking_only(chunk: &Value) -> bool {
    chunk.get("done") == Some(&json!(false))
        && (chunk.pointer("/message/thinking").is_some() || chunk.get("thinking").is_some())
        && chunk.pointer("/message/tool_calls").is_none()
}

/// One `done: false` chunk carrying text.
pub fn delta_chunk(route: Route, model: &Value, content: &str, thinking: Option<&str>) -> Value {
    let mut chunk = Map::new();
    chunk.insert("model".into(), model.clone());
    chunk.insert("created_at".into(), json!(created_at_now()));
    match route {
        Route::Chat => {
            let mut message = Map::new();
            message.insert("role".into(), json!("assistant"));
            message.insert("content".into(), json!(content));
            if let Some(t) = thinking {
                message.insert("thinking".into(), json!(t));
            }
            chunk.insert("message".into(), Value::Object(message));
        }
        Route::Generate => {
            chunk.insert("response".into(), json!(content));
            if let Some(t) = thinking {
                chunk.insert("thinking".into(), json!(t));
            }
        }
    }
    chunk.insert("done".into(), json!(false));
    Value::Object(chunk)
}
