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
//! - **Calls nobody asked for** (`tools.answer_unrelated`): when every
//!   call of an answer is to a tool that shares no word with the latest
//!   user message, and none of its values appears in the conversation
//!   ("Hi there!" → `get_weather({"city":"Paris"})`), the model is asked
//!   once more for an answer, as for a loop (no note). A streamed answer
//!   holds such calls until a related one comes or the answer ends. If no
//!   answer comes back, the calls are returned after all. Only where the
//!   tool choice allows an answer.
//!
//! What was done is reported as a repair (`X-Augur-Repaired`, or
//! `augur_repaired` in a streamed done chunk): `dropped_ungrounded`,
//! `loop`, `unrelated`; and counted in
//! `augur_tool_calls_dropped_total{reason}` and
//! `augur_tool_loops_broken_total`.

use std::sync::OnceLock;

use serde_json::Value;

use crate::{
    tools::{self, Grounding, ToolCall, ToolSet},
    validate::Violation,
};

/// Repair reported when ungrounded calls were dropped.
pub(crate) const DROPPED_UNGROUNDED: &str = "dropped_ungrounded";
/// Repair reported when a repeated call was withheld.
pub(crate) const LOOP: &str = "loop";
/// Repair reported when calls nobody asked for were replaced by an answer.
pub(crate) const UNRELATED: &str = "unrelated";
/// Most calls of one streamed answer remembered for the grounding rule.
const MAX_SEEN: usize = 64;

/// What one request's calls are screened against; see the module docs.
/// The conversation is only searched when a call needs it.
#[derive(Debug, Default)]
pub(crate) struct CallScreen {
    drop_ungrounded: bool,
    /// `tools.small_model: auto`: the rules that judge the conversation's
    /// words (ungrounded, unrelated) judge only calls the answer's scores
    /// mark unsure ([`CallScreen::screen_judged`]); elsewhere they are off.
    gated: bool,
    loop_breaker: bool,
    /// The latest user message, while `tools.answer_unrelated` is on and
    /// the choice allows an answer.
    question: Option<String>,
    /// The client's chat messages.
    messages: Vec<Value>,
    grounding: OnceLock<Grounding>,
    /// Calls the conversation holds a result for.
    answered: OnceLock<Vec<ToolCall>>,
    /// The `format` of the re-ask: the envelope's answer branch alone;
    /// `None` when nothing re-asks or the choice allows no answer.
    reask_format: Option<Value>,
}

/// Calls after screening.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Screened {
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
    pub(crate) fn new(
        messages: Vec<Value>,
        drop_ungrounded: bool,
        reask_format: Option<Value>,
    ) -> Self {
        CallScreen {
            drop_ungrounded,
            gated: false,
            loop_breaker: reask_format.is_some(),
            question: None,
            messages,
            grounding: OnceLock::new(),
            answered: OnceLock::new(),
            reask_format,
        }
    }

    /// Turn on `tools.answer_unrelated` for calls judged against
    /// `question`, re-asking with `reask_format` (the answer branch alone;
    /// `None` when the choice allows no answer, which leaves it off).
    pub(crate) fn answering_unrelated(
        mut self,
        question: &str,
        reask_format: Option<Value>,
    ) -> Self {
        if let Some(format) = reask_format {
            self.question = Some(question.to_string());
            self.reask_format.get_or_insert(format);
        }
        self
    }

    /// The screen under `tools.small_model: auto` when `on`.
    pub(crate) fn gated(mut self, on: bool) -> Self {
        self.gated = on;
        self
    }

    /// Whether the word rules wait for the answer's scores.
    pub(crate) fn is_gated(&self) -> bool {
        self.gated
    }

    /// The `format` of a re-ask, if anything re-asks.
    pub(crate) fn reask_format(&self) -> Option<&Value> {
        self.reask_format.as_ref()
    }

    fn grounding(&self) -> &Grounding {
        self.grounding
            .get_or_init(|| Grounding::from_messages(&self.messages))
    }

    fn answered(&self) -> &[ToolCall] {
        if !self.loop_breaker {
            return &[];
        }
        self.answered
            .get_or_init(|| tools::answered_calls(&self.messages))
    }

    /// Placeholders in `call`'s arguments, as violations (pointers into the
    /// arguments).
    pub(crate) fn violations(&self, set: &ToolSet, call: &ToolCall) -> Vec<Violation> {
        let mentioned = |s: &str| self.grounding().mentions(s);
        tools::placeholder_violations(call, set, &mentioned)
            .into_iter()
            .map(|(pointer, message)| Violation { pointer, message })
            .collect()
    }

    /// Whether `call` repeats a call the conversation already answered.
    pub(crate) fn is_repeat(&self, call: &ToolCall) -> bool {
        tools::repeats_answered(call, self.answered())
    }

    /// Whether `call` is to a tool that shares no word with the question,
    /// with every value invented (see the module docs).
    pub(crate) fn is_unrelated(&self, set: &ToolSet, call: &ToolCall) -> bool {
        !self.gated && self.judges_unrelated(set, call)
    }

    /// [`CallScreen::is_unrelated`] for a call its score marks `unsure`
    /// (under `small_model: auto` only such calls are judged).
    pub(crate) fn is_unrelated_judged(&self, set: &ToolSet, call: &ToolCall, unsure: bool) -> bool {
        (!self.gated || unsure) && self.judges_unrelated(set, call)
    }

    fn judges_unrelated(&self, set: &ToolSet, call: &ToolCall) -> bool {
        let (Some(question), Some(tool)) = (&self.question, set.get(&call.name)) else {
            return false;
        };
        tools::relevance::unrelated(tool, question)
            && tools::invents_every_value(call, set, self.grounding())
    }

    /// Whether `call`, coming after `earlier` in one answer, is dropped as
    /// an ungrounded continuation or addition.
    fn ungrounded(&self, set: &ToolSet, call: &ToolCall, earlier: &[ToolCall]) -> bool {
        !self.gated && self.judges_ungrounded(set, call, earlier)
    }

    fn judges_ungrounded(&self, set: &ToolSet, call: &ToolCall, earlier: &[ToolCall]) -> bool {
        // The conversation is searched only for a call after the first.
        self.drop_ungrounded
            && !earlier.is_empty()
            && tools::is_ungrounded(call, earlier, set, self.grounding())
    }

    /// One answer's calls screened: ungrounded continuations dropped, then
    /// repeats of answered calls set aside.
    #[cfg(test)]
    pub(crate) fn screen(&self, set: &ToolSet, calls: Vec<ToolCall>) -> Screened {
        let sure = vec![false; calls.len()];
        self.screen_judged(set, calls, &sure)
    }

    /// [`CallScreen::screen`] with each call's score: `unsure[i]` marks the
    /// calls the word rules may judge under `small_model: auto`.
    pub(crate) fn screen_judged(
        &self,
        set: &ToolSet,
        calls: Vec<ToolCall>,
        unsure: &[bool],
    ) -> Screened {
        let mut out = Screened::default();
        // The calls a later one is compared with: those not dropped.
        let mut earlier: Vec<ToolCall> = Vec::new();
        for (i, call) in calls.into_iter().enumerate() {
            let judged = !self.gated || unsure.get(i).copied().unwrap_or(false);
            if judged && self.judges_ungrounded(set, &call, &earlier) {
                out.ungrounded += 1;
                continue;
            }
            earlier.push(call.clone());
            if self.is_repeat(&call) {
                out.repeats.push(call);
            } else {
                out.calls.push(call);
            }
        }
        out
    }
}

/// Count and log what screening dropped.
pub(crate) fn note_dropped(ungrounded: usize, repeats: usize) {
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

/// What to do with one streamed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Send it now.
    Send,
    /// Drop it (an ungrounded continuation).
    Drop,
    /// Hold it: it repeats an answered call.
    Hold,
}

/// The screen applied call by call as a stream produces them.
#[derive(Debug, Default)]
pub(crate) struct StreamScreen {
    /// The calls so far that were not dropped (later calls are compared
    /// with them).
    seen: Vec<ToolCall>,
    held: Vec<ToolCall>,
    /// Calls nobody asked for, held while nothing else was sent.
    unrelated: Vec<ToolCall>,
    sent: usize,
    ungrounded: usize,
}

impl StreamScreen {
    /// Decide about the next call of the answer.
    pub(crate) fn admit(&mut self, screen: &CallScreen, set: &ToolSet, call: &ToolCall) -> Admit {
        if screen.ungrounded(set, call, &self.seen) {
            self.ungrounded += 1;
            note_dropped(1, 0);
            return Admit::Drop;
        }
        let verdict = if screen.is_repeat(call) {
            self.held.push(call.clone());
            Admit::Hold
        } else if self.holds_unrelated(screen, set, call) {
            self.unrelated.push(call.clone());
            Admit::Hold
        } else {
            self.sent += 1;
            Admit::Send
        };
        if self.seen.len() < MAX_SEEN {
            self.seen.push(call.clone());
        }
        verdict
    }

    /// Whether [`Self::admit`] would hold `call` as one nobody asked for.
    pub(crate) fn holds_unrelated(
        &self,
        screen: &CallScreen,
        set: &ToolSet,
        call: &ToolCall,
    ) -> bool {
        self.sent == 0 && screen.is_unrelated(set, call)
    }

    /// Whether repeats, or calls nobody asked for, are held.
    pub(crate) fn holding(&self) -> bool {
        !self.held.is_empty() || !self.unrelated.is_empty()
    }

    /// The held repeats, handed over once.
    pub(crate) fn take_held(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.held)
    }

    /// The held calls nobody asked for, handed over once: to send before
    /// a related call (they are part of a real answer after all), or at
    /// the end when no answer replaced them.
    pub(crate) fn take_unrelated(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.unrelated)
    }

    /// How many repeats are held.
    pub(crate) fn withheld(&self) -> usize {
        self.held.len()
    }

    /// The repairs to report at the end of a stream, counting the
    /// `withheld` repeats left out of the answer.
    pub(crate) fn repairs(&self, withheld: usize) -> Vec<&'static str> {
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

    /// [`StreamScreen::repairs`] for an answer that replaced held calls:
    /// `repeats` repeats and `unrelated` calls nobody asked for.
    pub(crate) fn repairs_answered(&self, repeats: usize, unrelated: usize) -> Vec<&'static str> {
        let mut out = self.repairs(repeats);
        if unrelated > 0 {
            metrics::counter!("augur_tool_calls_dropped_total", "reason" => "unrelated")
                .increment(unrelated as u64);
            out.push(UNRELATED);
        }
        out
    }
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;
