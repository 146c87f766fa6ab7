//! A plain answer the token limit cut: no retry is due. Ollama answers
//! what the model produced with `done_reason: "length"`, and so does augur
//! for an emulated answer: the text (and thinking) of a cut envelope
//! (`{"response": "…`, `{"reasoning": "…", "answer": "…`) is recovered and
//! the client's `num_predict` is respected, never raised.

use serde_json::Value;

use crate::{
    format::think::{ANSWER_FIELD, REASONING_FIELD},
    tools::envelope::KEY_RESPONSE,
    validate::Validators,
};

use super::super::job::{Expect, Interp};

/// The answer of a cut `text` when it is a plain text answer (or thinking
/// cut before any answer began); `None` when it is anything else (tool
/// calls, a structured answer, not JSON).
pub(crate) fn recover(text: &str, expect: &Expect, validators: &Validators) -> Option<Interp> {
    let (thinks, envelope) = match expect {
        Expect::Tools {
            answer_schema: None,
            json_answer: false,
            think,
            text: None,
            ..
        } => (*think, true),
        Expect::Think {
            answer_schema: None,
            json_answer: false,
        } => (true, false),
        _ => return None,
    };
    let closed = crate::validate::parse_and_repair(text, None, validators, true);
    let value = closed.value.filter(|_| closed.truncated)?;
    let (thinking, answer) = if thinks {
        let obj = value.as_object()?;
        if obj
            .keys()
            .any(|k| k != REASONING_FIELD && k != ANSWER_FIELD)
        {
            return None;
        }
        let thinking = match obj.get(REASONING_FIELD) {
            Some(Value::String(s)) => Some(s.clone()),
            None => None,
            Some(_) => return None,
        };
        (thinking, obj.get(ANSWER_FIELD).cloned())
    } else {
        (None, Some(value))
    };
    let content = match answer {
        None => String::new(),
        Some(answer) if envelope => response_text(&answer)?,
        Some(Value::String(s)) => s,
        Some(_) => return None,
    };
    Some(Interp {
        content,
        thinking,
        ..Interp::default()
    })
}

/// The text of an answer envelope `{"response": "…"}` (an empty one
/// counts: the cut came before its key was done).
fn response_text(envelope: &Value) -> Option<String> {
    let obj = envelope.as_object()?;
    match (obj.len(), obj.get(KEY_RESPONSE)) {
        (0, _) => Some(String::new()),
        (1, Some(Value::String(s))) => Some(s.clone()),
        _ => None,
    }
}

/// For a stream whose `done` chunk came with `raw` text: when the token
/// limit cut a plain answer, the part of its text still to send after the
/// first `sent` bytes went out (thinking went out as it came); `None`
/// otherwise.
pub(crate) fn stream_rest(
    done: &Value,
    raw: &str,
    sent: usize,
    expect: &Expect,
    validators: &Validators,
) -> Option<String> {
    if done.get("done_reason").and_then(Value::as_str) != Some("length") {
        return None;
    }
    let interp = recover(raw, expect, validators)?;
    Some(interp.content.get(sent..).unwrap_or_default().to_string())
}
