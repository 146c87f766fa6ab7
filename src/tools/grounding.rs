//! Whether a call's argument values come from the conversation, and the
//! calls that only continue a pattern with invented values.
//!
//! Small models given room for several calls tend to continue the first
//! call's pattern: asked for the factorial of 5 they call `factorial(5)`,
//! `factorial(10)`, `factorial(15)`, `factorial(20)`. A later call is an
//! *ungrounded continuation* when earlier calls of the answer have the
//! same tool and the same argument keys, and none of the values new to it
//! (different from the value at the same place in every such earlier call)
//! is grounded in the conversation. Values the schema names are left out
//! of that judgement. A call whose only new values are such is a *sweep*
//! (asked for one to-do item of high priority, they add it three times,
//! `low`, `medium`, `high`) and is dropped too, unless the conversation
//! mentions one of those values or they are only booleans and `null`.
//! Earlier calls are those kept, not those dropped.
//!
//! A value is *grounded* when:
//! - it is `null` or a boolean, or the schema names it (`enum`, `const`,
//!   `default`, `examples`);
//! - a number appears as a number in the conversation (`1,000` and `1000`,
//!   `5` and `5.0` and `five` are the same; the sign is ignored);
//! - a string appears in the conversation ignoring case and runs of
//!   whitespace, or each of its words does (numeric words as numbers).
//!
//! A later call is an *ungrounded addition* when no earlier call of the
//! answer has its tool and none of its values (strings and numbers the
//! schema does not name) is grounded.
//!
//! The conversation is every message's text (the client's system prompt,
//! user turns, tool results, assistant text and earlier call arguments),
//! never augur's own instruction. Past [`MAX_TEXT`] bytes grounding gives
//! up and every value counts as grounded.
//!
//! The work per answer is bounded whatever the answer and the conversation
//! hold: the conversation's words are indexed once (a word found there is
//! found without a search); a value's distinct words are judged, at most
//! [`MAX_WORDS`] of them; and the text searched for values and words not in
//! the index adds up to at most [`SEARCH_BUDGET`] bytes per conversation.
//! Past either bound, what is left counts as grounded: a search given up
//! never drops a call.

use std::{
    collections::HashSet,
    sync::atomic::{AtomicUsize, Ordering},
};

use serde_json::Value;

use super::call::ToolCall;
use super::leaves::{Leaf, changed_leaves, leaves, same_scalar};
use super::spec::ToolSet;

/// Most conversation text searched, in bytes.
pub(crate) const MAX_TEXT: usize = 1 << 20;
/// Most distinct words of one string value judged.
pub(crate) const MAX_WORDS: usize = 64;
/// Most bytes of conversation text searched (substring searches) for one
/// conversation, over every call judged against it: 32 full searches of
/// the largest conversation.
pub(crate) const SEARCH_BUDGET: usize = 32 * MAX_TEXT;

/// The conversation as searchable text and numbers.
#[derive(Debug, Default)]
pub(crate) struct Grounding {
    /// Lower-cased, whitespace collapsed to single spaces.
    text: String,
    /// The words of `text` (split at every character that is not
    /// alphanumeric).
    words: HashSet<String>,
    numbers: Vec<f64>,
    /// False when the conversation was too large to search: nothing is
    /// then taken as ungrounded.
    complete: bool,
    /// Bytes of `text` that substring searches may still scan.
    budget: AtomicUsize,
}

impl Grounding {
    /// The text of Ollama-shaped chat `messages`.
    pub(crate) fn from_messages(messages: &[Value]) -> Grounding {
        let mut raw = String::new();
        let mut complete = true;
        for msg in messages {
            let mut pieces = vec![super::history::content_text(msg.get("content"))];
            if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    let func = call.get("function").unwrap_or(call);
                    if let Some(args) = func.get("arguments").or_else(|| func.get("parameters")) {
                        pieces.push(match args {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        });
                    }
                }
            }
            for piece in pieces {
                if raw.len() + piece.len() + 1 > MAX_TEXT {
                    complete = false;
                    break;
                }
                raw.push_str(&piece);
                raw.push('\n');
            }
            if !complete {
                break;
            }
        }
        let mut g = Grounding::from_text(&raw);
        g.complete &= complete;
        g
    }

    /// Grounding in `text` (cut at [`MAX_TEXT`] bytes).
    pub(crate) fn from_text(text: &str) -> Grounding {
        let complete = text.len() <= MAX_TEXT;
        let mut end = text.len().min(MAX_TEXT);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let text = normalize(&text[..end]);
        let numbers = super::numbers::numbers_in(&text);
        let words = split_words(&text).map(str::to_string).collect();
        Grounding {
            text,
            words,
            numbers,
            complete,
            budget: AtomicUsize::new(SEARCH_BUDGET),
        }
    }

    /// Whether the conversation contains `s`, ignoring case and runs of
    /// whitespace; `None` when the search budget is spent.
    fn search(&self, s: &str) -> Option<bool> {
        if self.words.contains(s) {
            return Some(true);
        }
        let cost = self.text.len().max(1);
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(cost)
            })
            .ok()?;
        Some(self.text.contains(s))
    }

    /// Bytes of text the substring searches have scanned so far.
    #[cfg(test)]
    fn searched(&self) -> usize {
        SEARCH_BUDGET - self.budget.load(Ordering::Relaxed)
    }

    /// Whether the conversation contains `s`, ignoring case and runs of
    /// whitespace (and `true` when the search budget is spent).
    pub(crate) fn mentions(&self, s: &str) -> bool {
        let s = normalize(s);
        !s.is_empty() && self.search(&s).unwrap_or(true)
    }

    /// Whether the number `n` appears in the conversation.
    fn has_number(&self, n: f64) -> bool {
        let n = n.abs();
        let tolerance = 1e-9 * n.max(1.0);
        let at = self.numbers.partition_point(|m| *m < n - tolerance);
        self.numbers
            .get(at)
            .is_some_and(|m| (m - n).abs() <= tolerance)
    }

    /// Whether one argument value (a scalar) is grounded; `schema` is the
    /// schema it was produced under, if known.
    pub(crate) fn grounds(&self, value: &Value, schema: Option<&Value>) -> bool {
        if !self.complete || schema.is_some_and(|s| schema_names(s, value, 0)) {
            return true;
        }
        match value {
            Value::Null | Value::Bool(_) => true,
            Value::Number(n) => n.as_f64().is_none_or(|f| self.has_number(f)),
            Value::String(s) => self.grounds_text(s),
            // Containers are judged by their scalars.
            Value::Array(_) | Value::Object(_) => true,
        }
    }

    fn grounds_text(&self, s: &str) -> bool {
        let s = normalize(s);
        if s.is_empty() || self.search(&s).unwrap_or(true) {
            return true;
        }
        if let Ok(f) = s.replace(',', "").parse::<f64>() {
            return self.has_number(f);
        }
        let mut seen: HashSet<&str> = HashSet::new();
        let mut words = split_words(&s)
            .filter(|w| seen.insert(w))
            .take(MAX_WORDS)
            .peekable();
        words.peek().is_some()
            && words.all(|w| match w.parse::<f64>() {
                Ok(f) => self.has_number(f),
                Err(_) => self.search(w).unwrap_or(true),
            })
    }
}

/// The words of `s`: runs of alphanumeric characters.
fn split_words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// Whether the schema itself names `value` (`enum`, `const`, `default`,
/// `examples`, also in the branches of `anyOf`/`oneOf`/`allOf`).
fn schema_names(schema: &Value, value: &Value, depth: usize) -> bool {
    let Value::Object(s) = schema else {
        return false;
    };
    let listed = |key: &str| {
        s.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| same_scalar(v, value)))
    };
    let equal = |key: &str| s.get(key).is_some_and(|v| same_scalar(v, value));
    if listed("enum") || listed("examples") || equal("const") || equal("default") {
        return true;
    }
    depth < 4
        && ["anyOf", "oneOf", "allOf"].iter().any(|k| {
            s.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|b| schema_names(b, value, depth + 1)))
        })
}

/// Lower-case with runs of whitespace as one space, trimmed.
fn normalize(s: &str) -> String {
    s.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `call` only continues the pattern of `earlier` calls of the
/// same answer with values found nowhere in the conversation (see the
/// module docs): of the values that differ from every earlier call of the
/// same tool with the same argument keys, there are some the schema does
/// not name, and none of those is grounded. The first call of an answer
/// (`earlier` empty) never is.
pub(crate) fn is_ungrounded_continuation(
    call: &ToolCall,
    earlier: &[ToolCall],
    set: &ToolSet,
    grounding: &Grounding,
) -> bool {
    let keys = |c: &ToolCall| -> Option<Vec<String>> {
        let mut k: Vec<String> = c.arguments.as_object()?.keys().cloned().collect();
        k.sort();
        Some(k)
    };
    let Some(own) = keys(call) else { return false };
    let schema = set.get(&call.name).map(|t| &t.parameters);
    // The values new to this call: changed against each earlier call of
    // the same pattern.
    let mut new: Option<Vec<Leaf<'_>>> = None;
    for previous in earlier
        .iter()
        .filter(|e| e.name == call.name && keys(e).as_ref() == Some(&own))
    {
        let mut changed = Vec::new();
        changed_leaves(
            &call.arguments,
            &previous.arguments,
            schema,
            "",
            0,
            &mut changed,
        );
        new = Some(match new {
            None => changed,
            Some(so_far) => so_far
                .into_iter()
                .filter(|(at, ..)| changed.iter().any(|(c, ..)| c == at))
                .collect(),
        });
    }
    // Values the schema names say nothing about where a call came from
    // (`get_weather("Lyon","celsius")` then `("Paris","fahrenheit")`): the
    // call is judged by its other new values. When it has none, it is a
    // sweep through the schema's values (`add_todo` with priority `low`,
    // then `medium`, then `high`) unless the conversation mentions one of
    // the strings or numbers it changed; booleans and `null` alone keep it.
    new.is_some_and(|new| {
        let mut free = new.iter().filter(|(_, v, s)| !named(v, *s)).peekable();
        if free.peek().is_none() {
            let mut swept = new
                .iter()
                .filter(|(_, v, _)| matches!(v, Value::String(_) | Value::Number(_)))
                .peekable();
            return swept.peek().is_some() && swept.all(|(_, v, _)| !mentioned(v, grounding));
        }
        free.all(|(_, v, _)| !grounding.grounds(v, None))
    })
}

/// Whether the conversation holds the string or number `value` itself.
fn mentioned(value: &Value, grounding: &Grounding) -> bool {
    match value {
        Value::String(s) => grounding.mentions(s),
        other => grounding.grounds(other, None),
    }
}

/// `null`, a boolean, or a value the schema names.
fn named(value: &Value, schema: Option<&Value>) -> bool {
    matches!(value, Value::Null | Value::Bool(_))
        || schema.is_some_and(|s| schema_names(s, value, 0))
}

/// Whether `call` adds, after `earlier` calls of the same answer, a tool
/// none of them called, with values found nowhere in the conversation:
/// it has strings or numbers the schema does not name, and none of them is
/// grounded. Small models asked one thing tend to go on calling the other
/// tools with invented values (`get_stock_price("AAPL")` after
/// `sqrt(2)`). The first call of an answer never is.
pub(crate) fn is_ungrounded_addition(
    call: &ToolCall,
    earlier: &[ToolCall],
    set: &ToolSet,
    grounding: &Grounding,
) -> bool {
    if earlier.is_empty() || earlier.iter().any(|e| e.name == call.name) {
        return false;
    }
    invents_every_value(call, set, grounding)
}

/// Whether `call` has strings or numbers the schema does not name, and
/// none of them is grounded in the conversation (a call with no such value
/// cannot be judged, and is not).
pub(crate) fn invents_every_value(call: &ToolCall, set: &ToolSet, grounding: &Grounding) -> bool {
    let schema = set.get(&call.name).map(|t| &t.parameters);
    let mut all = Vec::new();
    leaves(&call.arguments, schema, "", 0, &mut all);
    let free: Vec<&Value> = all
        .iter()
        .filter(|(_, v, s)| {
            matches!(v, Value::String(_) | Value::Number(_))
                && !s.is_some_and(|s| schema_names(s, v, 0))
        })
        .map(|(_, v, _)| *v)
        .collect();
    !free.is_empty() && free.iter().all(|v| !grounding.grounds(v, None))
}

/// Whether `call`, after `earlier` calls of one answer, is dropped: an
/// ungrounded continuation or an ungrounded addition.
pub(crate) fn is_ungrounded(
    call: &ToolCall,
    earlier: &[ToolCall],
    set: &ToolSet,
    grounding: &Grounding,
) -> bool {
    is_ungrounded_continuation(call, earlier, set, grounding)
        || is_ungrounded_addition(call, earlier, set, grounding)
}

#[cfg(test)]
#[path = "grounding_tests.rs"]
mod tests;
