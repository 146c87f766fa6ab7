//! How sure the model was of an answer, from its own token
//! probabilities (Ollama's `logprobs`).
//!
//! Only the tokens that carry the model's choices count: for a tool call,
//! each argument's value (keys and punctuation are the grammar's, or the
//! call syntax's; an emulated call's name is an enum the grammar narrows,
//! and a token a grammar forces reports the model's unconstrained
//! probability, often near zero: it counts only for a call without
//! arguments; a native call's name counts); for a plain answer, its words.
//! Each set of tokens gives several signals ([`Score`]): the least likely
//! token's probability (`min`), the geometric mean probability (`mean`),
//! and how many tokens were below even odds (`unsure`), with the weakest
//! token and its alternatives kept for inspection. An answer's score is
//! its weakest call's. Calls are scored as the answer holds them: an
//! exact repeat within the answer, or a call cut off by its end, is no
//! call of the answer and is not scored.
//!
//! Confidence is a reason to look again, never proof that an answer is
//! right: a model can be sure of a wrong call (the commonest small-model
//! failure, a wrong number of calls, is made confidently).
//!
//! ```text
//! emulated calls   envelope JSON  -> spans of name and argument values -> tokens
//! native / text    the calls      -> their name and values found in the text -> tokens
//! plain answer     every token with a letter or a digit
//! ```

mod spans;
mod tokens;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde_json::Value;

pub(crate) use tokens::{Token, Tokens};

use spans::{Leaf, Step};

/// A token below this probability is unsure.
const UNSURE_BELOW: f64 = 0.5;

/// What one set of tokens says of the model's certainty.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Score {
    /// The least likely token's probability.
    pub min: f64,
    /// The geometric mean of the tokens' probabilities.
    pub mean: f64,
    /// Tokens below even odds.
    pub unsure: u32,
    /// Tokens scored.
    pub tokens: u32,
    /// The least likely token and the model's alternatives to it.
    pub weakest: Weakest,
}

/// The least likely token of a score.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Weakest {
    pub token: String,
    pub prob: f64,
    /// The most likely tokens at its position, with their probabilities.
    pub alternatives: Vec<(String, f64)>,
}

impl Score {
    /// The score of `tokens`; `None` when there is none.
    fn of<'a>(tokens: impl Iterator<Item = &'a Token>) -> Option<Score> {
        let mut weakest: Option<&Token> = None;
        let (mut sum, mut n, mut unsure) = (0.0, 0u32, 0u32);
        for t in tokens {
            sum += t.logprob;
            n += 1;
            if t.prob() < UNSURE_BELOW {
                unsure += 1;
            }
            if weakest.is_none_or(|w| t.logprob < w.logprob) {
                weakest = Some(t);
            }
        }
        let w = weakest?;
        Some(Score {
            min: w.prob(),
            mean: (sum / f64::from(n)).exp(),
            unsure,
            tokens: n,
            weakest: Weakest {
                token: w.text.clone(),
                prob: w.prob(),
                alternatives: w
                    .alternatives
                    .iter()
                    .map(|(t, lp)| (t.clone(), lp.exp()))
                    .collect(),
            },
        })
    }

    /// The weaker of two scores (by `min`), the unsure tokens of both.
    fn weaker(self, other: Score) -> Score {
        let unsure = self.unsure + other.unsure;
        let tokens = self.tokens + other.tokens;
        let mut w = if other.min < self.min { other } else { self };
        w.unsure = unsure;
        w.tokens = tokens;
        w
    }
}

/// One call's score.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallScore {
    pub name: String,
    pub score: Score,
}

/// The confidence of one answer: each call's, and the answer's own (its
/// weakest call's, or its text's when it made none).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Confidence {
    pub calls: Vec<CallScore>,
    pub answer: Score,
}

impl Confidence {
    fn of_calls(calls: Vec<CallScore>) -> Option<Confidence> {
        let answer = calls
            .iter()
            .map(|c| c.score.clone())
            .reduce(Score::weaker)?;
        Some(Confidence { calls, answer })
    }
}

/// The confidence of an emulated answer: `tokens` spell the envelope the
/// grammar produced (`{"tool_calls":[{"name","arguments"}]}`,
/// `{"tool_call":…}`, `{"response":…}`, under `answer` when thinking was
/// emulated). Calls are scored by their names' and values' tokens, an
/// answer by its value's.
pub(crate) fn of_envelope(tokens: &Tokens) -> Option<Confidence> {
    if !tokens.usable() {
        return None;
    }
    let text = tokens.text()?;
    let spans::Spans { leaves, objects } = spans::scan(text);
    let objects: HashMap<&[Step], &Leaf> = objects.iter().map(|o| (&o.path[..], o)).collect();
    let mut calls = Vec::new();
    let mut seen: Vec<Value> = Vec::new();
    for name in leaves.iter().filter(|l| is_call_name(&l.path)) {
        let call = &name.path[..name.path.len() - 1];
        // Scored as the answer holds its calls: a call cut off by the end
        // of the text is left out, and so is an exact repeat of an earlier
        // call (same name, same arguments); augur drops both.
        let Some(whole) = objects.get(call) else {
            continue;
        };
        let Some(this) = call_value(text.get(whole.start..whole.end)) else {
            continue;
        };
        if seen.contains(&this) {
            continue;
        }
        seen.push(this);
        let values = leaves.iter().filter(|l| under(&l.path, call, "arguments"));
        // The name is an enum the grammar narrows: past its first token
        // the grammar chooses, and a forced token reports the model's
        // unconstrained probability. Values decide; a call without any is
        // scored by its name.
        let scored = Score::of(values.flat_map(|l| tokens.within(l.start, l.end)))
            .or_else(|| Score::of(tokens.within(name.start, name.end)));
        let Some(score) = scored else {
            continue;
        };
        let raw = text.get(name.start..name.end).filter(|n| *n != "\"");
        calls.push(CallScore {
            name: raw.unwrap_or_default().to_string(),
            score,
        });
    }
    if !calls.is_empty() {
        return Confidence::of_calls(calls);
    }
    let answer = leaves
        .iter()
        .filter(
            |l| matches!(l.path.first(), Some(Step::Key(k)) if k == "response" || k == "answer"),
        )
        .flat_map(|l| tokens.within(l.start, l.end))
        .filter(|t| t.text.chars().any(char::is_alphanumeric));
    Some(Confidence {
        calls: Vec::new(),
        answer: Score::of(answer)?,
    })
}

/// The confidence of a JSON answer (a `format`): every value's tokens.
pub(crate) fn of_json(tokens: &Tokens) -> Option<Confidence> {
    if !tokens.usable() {
        return None;
    }
    let leaves = spans::leaves(tokens.text()?);
    let values = leaves.iter().flat_map(|l| tokens.within(l.start, l.end));
    Some(Confidence {
        calls: Vec::new(),
        answer: Score::of(values)?,
    })
}

/// The confidence of calls a model made natively or wrote as text:
/// `calls` (name and arguments, in order) found in the text `tokens`
/// spell, their name then each argument value in turn. A call whose name
/// is not found is not scored.
pub(crate) fn of_calls(tokens: &Tokens, calls: &[(String, Value)]) -> Option<Confidence> {
    if !tokens.usable() {
        return None;
    }
    let text = tokens.text()?;
    let mut cursor = 0;
    let mut scored = Vec::new();
    for (name, arguments) in calls {
        let Some(at) = text[cursor..].find(name.as_str()).map(|i| cursor + i) else {
            continue;
        };
        cursor = at + name.len();
        let mut spans = vec![(at, cursor)];
        for value in leaf_values(arguments) {
            if let Some((s, e)) = find_value(text, cursor, &value) {
                spans.push((s, e));
                cursor = e;
            }
        }
        let toks = spans.iter().flat_map(|(s, e)| tokens.within(*s, *e));
        if let Some(score) = Score::of(toks) {
            scored.push(CallScore {
                name: name.clone(),
                score,
            });
        }
    }
    Confidence::of_calls(scored)
}

/// The confidence of a plain answer: every token with a letter or a digit.
pub(crate) fn of_text(tokens: &Tokens) -> Option<Confidence> {
    if !tokens.usable() {
        return None;
    }
    Some(Confidence {
        calls: Vec::new(),
        answer: Score::of(tokens.words())?,
    })
}

/// A call object's name and arguments, as JSON (`None` when `text` is
/// not a JSON object): what makes two calls the same call.
fn call_value(text: Option<&str>) -> Option<Value> {
    let v: Value = serde_json::from_str(text?).ok()?;
    Some(Value::Array(vec![
        v.get("name")?.clone(),
        v.get("arguments").cloned().unwrap_or(Value::Null),
    ]))
}

/// `path` ends in the `name` of a call: `…/tool_call/name` or
/// `…/tool_calls/<i>/name`.
fn is_call_name(path: &[Step]) -> bool {
    match path {
        [.., Step::Key(k), Step::Key(n)] => k == "tool_call" && n == "name",
        [.., Step::Key(k), Step::Index(_), Step::Key(n)] => k == "tool_calls" && n == "name",
        _ => false,
    }
}

/// `path` lies under `prefix` then `key`.
fn under(path: &[Step], prefix: &[Step], key: &str) -> bool {
    path.len() > prefix.len()
        && path.starts_with(prefix)
        && matches!(&path[prefix.len()], Step::Key(k) if k == key)
}

/// The scalar values of `arguments`, in order, as the text a model writes
/// them in: a string's content, anything else as JSON.
fn leaf_values(arguments: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![arguments];
    while let Some(v) = stack.pop() {
        if out.len() >= 256 {
            break;
        }
        match v {
            Value::Object(m) => stack.extend(m.values().rev()),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::String(s) if !s.is_empty() => out.push(s.clone()),
            Value::String(_) => {}
            other => out.push(other.to_string()),
        }
    }
    out
}

/// Where `value` is written in `text` at or after `from`: as it is, or
/// escaped as a JSON string's content.
fn find_value(text: &str, from: usize, value: &str) -> Option<(usize, usize)> {
    let rest = text.get(from..)?;
    if let Some(i) = rest.find(value) {
        return Some((from + i, from + i + value.len()));
    }
    let escaped = Value::String(value.to_string()).to_string();
    let escaped = &escaped[1..escaped.len() - 1];
    rest.find(escaped)
        .map(|i| (from + i, from + i + escaped.len()))
}

/// A call leaf, for tests.
#[cfg(test)]
pub(crate) fn leaves_of(text: &str) -> Vec<Leaf> {
    spans::leaves(text)
}
