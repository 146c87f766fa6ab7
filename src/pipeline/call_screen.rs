//! Emulated tool calls screened before they reach the client, for the
//! ways small models misuse tools:
//!
//! - **Placeholders**: an argument that is a template token (`<city>`,
//!   `{city}`, `"string"`, …) is a violation, repaired and retried with
//!   feedback like any invalid argument ([`CallScreen::violations`]).
//! - **Over-calling** (`tools.drop_ungrounded`): calls after the first that
//!   only continue an earlier call's pattern, or add another tool, with
//!   values found nowhere in the conversation are dropped
//!   ([`crate::tools::grounding`]).
//! - **Loops** (`tools.loop_breaker`): a call repeating one the
//!   conversation already holds a result for is withheld. When nothing
//!   else is left, the model is asked once more, with the answer branch of
//!   the envelope only and a one-line note that the result is above
//!   ([`reask`]); if that fails, the repeated call is returned after all.
//!   Only where the tool choice allows an answer.
//!
//! What was done is reported as a repair (`X-Augur-Repaired`, or
//! `augur_repaired` in a streamed done chunk): `dropped_ungrounded`,
//! `loop`; and counted in `augur_tool_calls_dropped_total{reason}` and
//! `augur_tool_loops_broken_total`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::{
    error::ProxyError,
    policy::ValidatePolicy,
    tools::{self, Grounding, StreamEvent, StreamExtractor, ToolCall, ToolSet},
    validate::Violation,
};

use super::{
    attempts::{self, Completed, Expect},
    flows::Job,
    plan::Route,
};

/// Repair reported when ungrounded calls were dropped.
pub const DROPPED_UNGROUNDED: &str = "dropped_ungrounded";
/// Repair reported when a repeated call was withheld.
pub const LOOP: &str = "loop";
/// Most calls of one streamed answer remembered for the grounding rule.
const MAX_SEEN: usize = 64;

/// What one request's calls are screened against; see the module docs.
/// The conversation is only searched when a call needs it.
#[derive(Debug, Default)]
pub struct CallScreen {
    drop_ungrounded: bool,
    /// The client's chat messages.
    messages: Vec<Value>,
    grounding: OnceLock<Grounding>,
    /// Calls the conversation holds a result for.
    answered: OnceLock<Vec<ToolCall>>,
    /// The `format` of the re-ask: the envelope's answer branch alone;
    /// `None` when the loop breaker is off or the choice allows no answer.
    reask_format: Option<Value>,
}

/// Calls after screening.
#[derive(Debug, Default, PartialEq)]
pub struct Screened {
    /// The calls to return.
    pub calls: Vec<ToolCall>,
    /// Ungrounded continuations dropped.
    pub ungrounded: usize,
    /// Calls withheld because they repeat an answered one.
    pub repeats: Vec<ToolCall>,
}

impl CallScreen {
    /// The screen for a request with the client's chat `messages`.
    /// `reask_format` (the answer branch alone, see
    /// [`crate::tools::build_format`]) turns the loop breaker on.
    pub fn new(messages: Vec<Value>, drop_ungrounded: bool, reask_format: Option<Value>) -> Self {
        CallScreen {
            drop_ungrounded,
            messages,
            grounding: OnceLock::new(),
            answered: OnceLock::new(),
            reask_format,
        }
    }

    fn grounding(&self) -> &Grounding {
        self.grounding
            .get_or_init(|| Grounding::from_messages(&self.messages))
    }

    fn answered(&self) -> &[ToolCall] {
        if self.reask_format.is_none() {
            return &[];
        }
        self.answered
            .get_or_init(|| tools::answered_calls(&self.messages))
    }

    /// Placeholders in `call`'s arguments, as violations (pointers into the
    /// arguments).
    pub fn violations(&self, set: &ToolSet, call: &ToolCall) -> Vec<Violation> {
        let mentioned = |s: &str| self.grounding().mentions(s);
        tools::placeholder_violations(call, set, &mentioned)
            .into_iter()
            .map(|(pointer, message)| Violation { pointer, message })
            .collect()
    }

    /// Whether `call` repeats a call the conversation already answered.
    pub fn is_repeat(&self, call: &ToolCall) -> bool {
        tools::repeats_answered(call, self.answered())
    }

    /// Whether `call`, coming after `earlier` in one answer, is dropped as
    /// an ungrounded continuation or addition.
    fn ungrounded(&self, set: &ToolSet, call: &ToolCall, earlier: &[ToolCall]) -> bool {
        // The conversation is searched only for a call after the first.
        self.drop_ungrounded
            && !earlier.is_empty()
            && tools::is_ungrounded(call, earlier, set, self.grounding())
    }

    /// One answer's calls screened: ungrounded continuations dropped, then
    /// repeats of answered calls set aside.
    pub fn screen(&self, set: &ToolSet, calls: Vec<ToolCall>) -> Screened {
        let mut out = Screened::default();
        for (i, call) in calls.iter().enumerate() {
            if self.ungrounded(set, call, &calls[..i]) {
                out.ungrounded += 1;
            } else if self.is_repeat(call) {
                out.repeats.push(call.clone());
            } else {
                out.calls.push(call.clone());
            }
        }
        out
    }
}

/// Count and log what screening dropped.
fn note_dropped(ungrounded: usize, repeats: usize) {
    if ungrounded > 0 {
        metrics::counter!("augur_tool_calls_dropped_total", "reason" => "ungrounded")
            .increment(ungrounded as u64);
    }
    if repeats > 0 {
        metrics::counter!("augur_tool_calls_dropped_total", "reason" => "repeat")
            .increment(repeats as u64);
    }
    if ungrounded + repeats > 0 {
        tracing::info!(ungrounded, repeats, "tool calls withheld from the answer");
    }
}

/// Screen a whole, valid answer's calls; re-ask for an answer when only
/// repeats of answered calls are left.
pub async fn after_complete(job: &Job, mut completed: Completed) -> Result<Completed, ProxyError> {
    let Expect::Tools { set, screen, .. } = &job.expect else {
        return Ok(completed);
    };
    if completed.invalid || completed.interp.calls.is_empty() {
        return Ok(completed);
    }
    let screened = screen.screen(set, std::mem::take(&mut completed.interp.calls));
    let dropped = if screened.ungrounded > 0 {
        vec![DROPPED_UNGROUNDED.to_string()]
    } else {
        Vec::new()
    };
    completed.interp.repairs.extend(dropped.iter().cloned());
    if screened.repeats.is_empty() || !screened.calls.is_empty() {
        note_dropped(screened.ungrounded, screened.repeats.len());
        if !screened.repeats.is_empty() {
            completed.interp.repairs.push(LOOP.to_string());
        }
        completed.interp.calls = screened.calls;
        return Ok(completed);
    }
    match reask(job, &screened.repeats).await {
        Some(mut answer) => {
            note_dropped(screened.ungrounded, screened.repeats.len());
            answer.attempts += completed.attempts;
            answer.interp.repairs.extend(dropped);
            answer.interp.repairs.push(LOOP.to_string());
            Ok(answer)
        }
        None => {
            note_dropped(screened.ungrounded, 0);
            completed.interp.calls = screened.repeats;
            Ok(completed)
        }
    }
}

/// Ask once more, for an answer only: the envelope's answer branch as the
/// format (in grammar mode, also after a text-mode answer) and a note that the result of
/// `repeats` is above. `None` when
/// the choice allows no answer or no answer came back (then the repeated
/// call stands). An answer cut off by the token limit is returned as far
/// as it got, with `done_reason: "length"`, as a native model's would be.
pub async fn reask(job: &Job, repeats: &[ToolCall]) -> Option<Completed> {
    let Expect::Tools {
        set,
        screen,
        answer_schema,
        json_answer,
        think,
        text,
    } = &job.expect
    else {
        return None;
    };
    let format = screen.reask_format.clone()?;
    if job.route != Route::Chat {
        return None;
    }
    // In text mode the model would write its call again: the re-ask goes
    // in grammar mode, whose answer branch holds it to an answer.
    let (mut body, expect) = match text {
        Some(_) => {
            let (mut grammar, expect) = super::text_mode::grammar_fallback(&job.expect)?;
            if let Some(model) = job.body.get("model") {
                grammar.insert("model".into(), model.clone());
            }
            (grammar, expect)
        }
        None => (job.body.clone(), job.expect.clone()),
    };
    body.insert("format".into(), format);
    add_note(&mut body, &note(repeats));
    let vp = ValidatePolicy {
        max_retries: 0,
        ..job.validate.clone()
    };
    let outcome = attempts::complete(
        &job.ctx,
        job.route,
        body,
        &expect,
        &vp,
        &job.validators,
        None,
    )
    .await;
    let mut answer = match outcome {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(error = %e, "asking for an answer instead of a repeated call failed");
            return None;
        }
    };
    if !answer.interp.calls.is_empty() {
        return None;
    }
    if answer.invalid {
        let text_answer = answer_schema.is_none() && !json_answer && !think;
        let cut_off = answer.response.get("done_reason").and_then(Value::as_str) == Some("length");
        if !(text_answer && cut_off) {
            return None;
        }
        answer.interp.content = answer_so_far(&answer.interp.content, set)?;
        answer.interp.violations.clear();
        answer.invalid = false;
    }
    metrics::counter!("augur_tool_loops_broken_total").increment(1);
    Some(answer)
}

/// The text of a cut-off `{"response":"…` envelope, as far as it got.
fn answer_so_far(raw: &str, set: &ToolSet) -> Option<String> {
    let mut extractor = StreamExtractor::new(set, false);
    let text: String = extractor
        .feed(raw)
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::AnswerDelta(t) => Some(t),
            StreamEvent::Call(_) => None,
        })
        .collect();
    let answered = extractor.branch() == Some(tools::Branch::Answer);
    (answered && !text.trim().is_empty()).then_some(text)
}

/// The one-line note of a re-ask. Put as an aside: small models repeat a
/// plain instruction in their answer.
fn note(repeats: &[ToolCall]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for call in repeats {
        if !names.contains(&call.name.as_str()) {
            names.push(&call.name);
        }
    }
    let names = names.join(" and ");
    format!("(The result of {names} is above: reply with the answer.)")
}

/// Append `note` to the last user message, or add it as one.
fn add_note(body: &mut Map<String, Value>, note: &str) {
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    if let Some(Value::Object(last)) = messages.last_mut()
        && last.get("role").and_then(Value::as_str) == Some("user")
        && let Some(Value::String(content)) = last.get_mut("content")
    {
        content.push_str("\n\n");
        content.push_str(note);
        return;
    }
    messages.push(json!({"role": "user", "content": note}));
}

/// What to do with one streamed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send it now.
    Send,
    /// Drop it (an ungrounded continuation).
    Drop,
    /// Hold it: it repeats an answered call.
    Hold,
}

/// The screen applied call by call as a stream produces them.
#[derive(Debug, Default)]
pub struct StreamScreen {
    seen: Vec<ToolCall>,
    held: Vec<ToolCall>,
    ungrounded: usize,
}

impl StreamScreen {
    /// Decide about the next call of the answer.
    pub fn admit(&mut self, screen: &CallScreen, set: &ToolSet, call: &ToolCall) -> Admit {
        let verdict = if screen.ungrounded(set, call, &self.seen) {
            self.ungrounded += 1;
            note_dropped(1, 0);
            Admit::Drop
        } else if screen.is_repeat(call) {
            self.held.push(call.clone());
            Admit::Hold
        } else {
            Admit::Send
        };
        if self.seen.len() < MAX_SEEN {
            self.seen.push(call.clone());
        }
        verdict
    }

    /// Whether repeats are held.
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The held repeats, handed over once.
    pub fn take_held(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.held)
    }

    /// How many repeats are held.
    pub fn withheld(&self) -> usize {
        self.held.len()
    }

    /// The repairs to report at the end of a stream, counting the
    /// `withheld` repeats left out of the answer.
    pub fn repairs(&self, withheld: usize) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.ungrounded > 0 {
            out.push(DROPPED_UNGROUNDED);
        }
        if withheld > 0 {
            note_dropped(0, withheld);
            out.push(LOOP);
        }
        out
    }
}

#[cfg(test)]
#[path = "call_screen_tests.rs"]
mod tests;
