//! [`super::settle`], streamed: the checks of a native answer's calls as
//! [`super::stream`] passes its chunks on. Ollama sends every call
//! whole (one a chunk, or several in one), so each is checked as it comes:
//!
//! ```text
//! valid          -> the chunk, untouched
//! repaired valid -> the chunk with the repaired arguments (native_call_repaired)
//! invalid        -> held, and everything after it, until the done chunk:
//!                   nothing but thinking sent and retries left -> the answer
//!                   settled whole ([`settle::settle`]: retried with
//!                   the violations) and streamed; else validate.on_failure:
//!                   an error line, or what was held as written with
//!                   augur_validation: "invalid"
//! lost (done, nothing sent, tokens generated) -> asked once more, emulated
//! ```

use serde_json::{Map, Value, json};

use crate::{error::ProxyError, policy::OnFailure, tools::ToolSet};

use super::{
    super::{
        checks,
        chunk::{call_chunk, delta_chunk, done_chunk},
        job::Job,
        plan::Route,
    },
    check::{self, Verdict},
    markup::has_calls,
    settle::{self, Checks},
};

/// What becomes of a chunk with calls.
pub(crate) enum Admit {
    /// It goes out (its arguments repaired where that helped).
    Pass(Value),
    /// It is held: a call in it is invalid.
    Hold,
}

/// The checks of one streamed native answer.
pub(crate) struct Gate {
    /// Check (and repair) each call.
    pub validate: bool,
    /// Ask a lost answer once more.
    pub recover: bool,
    /// Calls were checked.
    checked: bool,
    /// A call was repaired.
    repaired: bool,
    /// The first invalid call's chunk; it and all after it are held.
    failed: Option<Verdict>,
    held: Vec<Value>,
}

impl Gate {
    pub(crate) fn new(job: &Job, checks: Checks) -> Self {
        let on = job.route == Route::Chat && job.validate.enabled;
        Gate {
            validate: on && checks.validate,
            recover: on && checks.recover,
            checked: false,
            repaired: false,
            failed: None,
            held: Vec::new(),
        }
    }

    /// An invalid call was held: every chunk after it is held too.
    pub(crate) fn holding(&self) -> bool {
        self.failed.is_some()
    }

    pub(crate) fn hold(&mut self, chunk: Value) {
        self.held.push(chunk);
    }

    /// Check the calls of `chunk`; the repairs made go to `repairs`.
    pub(crate) fn admit(
        &mut self,
        set: &ToolSet,
        job: &Job,
        mut chunk: Value,
        repairs: &mut Vec<String>,
    ) -> Admit {
        if !self.validate {
            return Admit::Pass(chunk);
        }
        if self.holding() {
            self.held.push(chunk);
            return Admit::Hold;
        }
        let Some(calls) = chunk
            .get("message")
            .and_then(Value::as_object)
            .and_then(check::calls_of)
        else {
            return Admit::Pass(chunk);
        };
        self.checked = true;
        let verdict = check::check(set, calls, job.validate.repair);
        if !verdict.is_valid() {
            tracing::info!(
                violations = %checks::describe(&check::details(set, &verdict)),
                "a streamed native tool call failed validation; held"
            );
            self.failed = Some(verdict);
            self.held.push(chunk);
            return Admit::Hold;
        }
        if !verdict.repairs.is_empty() {
            if let Some(Value::Object(m)) = chunk.get_mut("message") {
                check::write_back(m, &verdict);
            }
            if !self.repaired {
                metrics::counter!("augur_repairs_total").increment(1);
                repairs.push(settle::REPAIRED.into());
            }
            self.repaired = true;
            repairs.extend(verdict.repairs.iter().cloned());
        }
        Admit::Pass(chunk)
    }

    /// A held done chunk split: the calls stay held (as `done: false`),
    /// the done chunk without them comes back.
    pub(crate) fn split_done(&mut self) -> Value {
        let Some(last) = self.held.last_mut() else {
            return Value::Null;
        };
        let mut done = last.clone();
        if let Value::Object(f) = last {
            f.insert("done".into(), Value::Bool(false));
            f.remove("done_reason");
            f.retain(|k, _| !k.ends_with("_count") && !k.ends_with("_duration"));
        }
        if let Value::Object(f) = &mut done {
            f.insert(
                "message".into(),
                json!({"role": "assistant", "content": ""}),
            );
        }
        done
    }

    /// The answer's outcome counted, when it passed (nothing held).
    pub(crate) fn count_passed(&self) {
        if self.checked && !self.holding() {
            count(if self.repaired { "repaired" } else { "valid" });
        }
    }

    /// The held chunks and the first invalid call's verdict.
    pub(crate) fn take_held(&mut self) -> (Vec<Value>, Option<Verdict>) {
        (std::mem::take(&mut self.held), self.failed.take())
    }
}

/// The held answer, whole: the done chunk's fields, the held content,
/// thinking and calls in `message`.
pub(crate) fn whole(held: &[Value], done: &Value) -> Value {
    let mut content = String::new();
    let mut thinking = String::new();
    let mut calls = Vec::new();
    for chunk in held {
        let Some(m) = chunk.get("message").and_then(Value::as_object) else {
            continue;
        };
        let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
        content.push_str(text("content"));
        thinking.push_str(text("thinking"));
        if let Some(Value::Array(list)) = m.get("tool_calls") {
            calls.extend(list.iter().cloned());
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), Value::String(content));
    if !thinking.is_empty() {
        message.insert("thinking".into(), Value::String(thinking));
    }
    message.insert("tool_calls".into(), Value::Array(calls));
    let mut out = match done {
        Value::Object(f) => f.clone(),
        _ => Map::new(),
    };
    out.insert("message".into(), Value::Object(message));
    Value::Object(out)
}

/// The chunks that stream a settled whole answer as `model`: its
/// thinking and content, its calls, then the done chunk (the answer's own
/// counts and reasons).
pub(crate) fn chunks_of(response: &Value, model: &Value) -> Vec<Value> {
    let message = response
        .get("message")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let text = |k: &str| {
        message
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (content, thinking) = (text("content"), text("thinking"));
    let mut out = Vec::new();
    if !content.is_empty() || !thinking.is_empty() {
        let thinking = Some(thinking.as_str()).filter(|t| !t.is_empty());
        out.push(delta_chunk(Route::Chat, model, &content, thinking));
    }
    if let Some(calls) = message.get("tool_calls").filter(|c| has_calls(Some(c))) {
        out.push(call_chunk(model, calls.clone()));
    }
    let mut done = response.clone();
    if let Value::Object(f) = &mut done {
        f.insert("model".into(), model.clone());
    }
    out.push(done_chunk(Route::Chat, done));
    out
}

/// `validate.on_failure` over a held invalid answer no retry can help:
/// `Err` (422 text, as the whole path words it) for `error`; `Ok` for
/// `pass` (the held chunks go out as written, marked invalid).
pub(crate) fn fail(job: &Job, set: &ToolSet, verdict: Option<&Verdict>) -> Result<(), ProxyError> {
    // A retry counts its own (`native::settle`): only held answers no
    // retry looked at are counted here.
    metrics::counter!("augur_validation_failures_total").increment(1);
    count("invalid");
    if job.validate.on_failure != OnFailure::Error {
        return Ok(());
    }
    metrics::counter!("augur_validation_rejected_total").increment(1);
    let verdict = verdict.cloned().unwrap_or_default();
    let (name, _) = verdict.first_invalid().unwrap_or(("", String::new()));
    let why = checks::describe(&check::details(set, &verdict));
    Err(ProxyError::Unprocessable(format!(
        "tool call {name:?} is invalid: {why}"
    )))
}

fn count(outcome: &'static str) {
    metrics::counter!("augur_native_calls_total", "outcome" => outcome).increment(1);
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
