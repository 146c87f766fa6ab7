//! The re-ask: the model asked once more, for an answer only, when the
//! calls of its answer are withheld (repeats of answered calls, calls
//! nobody asked for; see [`crate::pipeline::screen`]).

use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::{
    policy::ValidatePolicy,
    telemetry::spans,
    tools::{self, StreamEvent, StreamExtractor, ToolCall, ToolSet},
};

use super::{
    super::{
        job::{Completed, Expect, Job},
        plan::Route,
    },
    retry_loop, text_mode,
};

/// The note of a re-ask after `repeats` (none without repeats).
pub(crate) fn note_for(repeats: &[ToolCall]) -> Option<String> {
    (!repeats.is_empty()).then(|| note(repeats))
}

/// Ask once more, for an answer only: the envelope's answer branch as the
/// format (in grammar mode, also after a text-mode answer), with `note`
/// (see [`note_for`]) added to the system message. `None` when the
/// choice allows no answer or no answer came back (then the calls stand).
/// An answer cut off by the token limit is returned as far as it got, with
/// `done_reason: "length"`, as a native model's would be.
pub(crate) async fn reask(job: &Job, note: Option<String>) -> Option<Completed> {
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
    let format = screen.reask_format()?.clone();
    if job.route != Route::Chat {
        return None;
    }
    // In text mode the model would write its call again: the re-ask goes
    // in grammar mode, whose answer branch holds it to an answer.
    let (mut body, expect) = match text {
        Some(_) => {
            let (mut grammar, expect) = text_mode::grammar_fallback(&job.expect)?;
            if let Some(model) = job.body.get("model") {
                grammar.insert("model".into(), model.clone());
            }
            (grammar, expect)
        }
        None => (job.body.clone(), job.expect.clone()),
    };
    body.insert("format".into(), format);
    if let Some(note) = note {
        add_note(&mut body, &note);
    }
    let vp = ValidatePolicy {
        max_retries: 0,
        ..job.validate.clone()
    };
    let outcome = retry_loop::run_until_valid(
        &job.ctx,
        job.route,
        body,
        &expect,
        &vp,
        &job.validators,
        None,
    )
    .instrument(spans::reask())
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
pub(crate) fn answer_so_far(raw: &str, set: &ToolSet) -> Option<String> {
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

/// The one-line note of a re-ask.
pub(crate) fn note(repeats: &[ToolCall]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for call in repeats {
        if !names.contains(&call.name.as_str()) {
            names.push(&call.name);
        }
    }
    let names = names.join(" and ");
    format!("The result of {names} is above: reply with the answer.")
}

/// Append `note` to the leading system message, where augur's instruction
/// is, or add one. In the last user message, Gemma 3 270M copied it as its
/// answer in 6 of 15 answered calls; from the system message, in none.
pub(crate) fn add_note(body: &mut Map<String, Value>, note: &str) {
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    if let Some(Value::Object(first)) = messages.first_mut()
        && first.get("role").and_then(Value::as_str) == Some("system")
        && let Some(Value::String(content)) = first.get_mut("content")
    {
        content.push('\n');
        content.push_str(note);
        return;
    }
    messages.insert(0, json!({"role": "system", "content": note}));
}
