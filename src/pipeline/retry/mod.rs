//! What the next attempt asks after an unusable answer, and why.
//!
//! ```text
//! cut by the token limit, one array / string ran away  -> Runaway:   bound it in the grammar
//!                                                         (maxItems / maxLength, grammar only)
//! cut by the token limit, long but healthy             -> Truncated: raise num_predict
//! complete but invalid                                 -> Invalid:   the violations
//! ```
//!
//! A plain text answer the limit cut is no failure ([`plain::recover`]:
//! answered as Ollama would, `done_reason: "length"`). Each retry carries
//! an excerpt of the failed answer around the problem ([`excerpt`], at most
//! [`excerpt::EXCERPT_MAX`] bytes) and what was wrong, as far as they fit in
//! the model's context ([`fit`]); the request as the client sent it,
//! augur's instruction included, is never shortened.

pub(crate) mod bound;
pub(crate) mod cut;
pub(crate) mod excerpt;
pub(crate) mod fit;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

use crate::validate::{Violation, format_violations};

use super::plan::Route;
use excerpt::{EXCERPT_MAX, Problem};
use fit::Turn;

/// Excerpt sizes tried, longest first, when a retry must fit.
const EXCERPT_SIZES: [usize; 3] = [EXCERPT_MAX, EXCERPT_MAX / 4, EXCERPT_MAX / 16];
/// Longest JSON pointer quoted in feedback, in characters.
const MAX_POINTER: usize = 200;
/// `num_predict` assumed when a retry raises it and the request set none.
const DEFAULT_NUM_PREDICT: i64 = 512;

/// Why an attempt is retried (the `cause` of `augur_retries_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Complete, but invalid.
    Invalid,
    /// Cut by the token limit, with no one part to blame: more tokens.
    Truncated,
    /// Cut inside an array or string that ran away: bounded in the grammar.
    Runaway,
    /// A text-mode answer that could not be read as calls: asked again in
    /// grammar mode.
    Grammar,
}

impl Cause {
    /// The metric label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Cause::Invalid => "invalid",
            Cause::Truncated => "truncated",
            Cause::Runaway => "runaway",
            Cause::Grammar => "grammar",
        }
    }
}

/// The attempts of one request: the body as first sent (changed only by
/// grammar bounds, a raised `num_predict` or a degraded schema) and the
/// feedback turns so far (one per failed attempt, bounded by the policy's
/// retries).
pub(crate) struct Retry {
    route: Route,
    base: Map<String, Value>,
    turns: Vec<Turn>,
    /// The model's context in tokens, once looked up.
    context: Option<u64>,
    /// Text mode: the answer is calls written as text, not JSON.
    text_mode: bool,
}

impl Retry {
    /// Attempts of `body` on `route`.
    pub(crate) fn new(route: Route, body: Map<String, Value>) -> Retry {
        Retry {
            route,
            base: body,
            turns: Vec::new(),
            context: None,
            text_mode: false,
        }
    }

    /// Phrase feedback for calls written as text (text mode).
    pub(crate) fn set_text_mode(&mut self, on: bool) {
        self.text_mode = on;
    }

    /// The body without feedback (to degrade its schema).
    pub(crate) fn base_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.base
    }

    /// The model the body is for.
    pub(crate) fn model(&self) -> &str {
        self.base
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The request's own options.
    pub(crate) fn options(&self) -> Option<&Map<String, Value>> {
        self.base.get("options").and_then(Value::as_object)
    }

    /// Whether the context is still to be learned before the next attempt.
    pub(crate) fn needs_context(&self) -> bool {
        self.context.is_none() && !self.turns.is_empty()
    }

    /// Fit feedback into `tokens` of context from now on.
    pub(crate) fn set_context(&mut self, tokens: u64) {
        self.context = Some(tokens);
    }

    /// The body of the next attempt.
    pub(crate) fn body(&self) -> Map<String, Value> {
        fit::compose(self.route, &self.base, &self.turns, self.context)
    }

    /// Plan the next attempt after `text` failed with `violations`
    /// (`truncated`: the token limit cut it).
    pub(crate) fn after(&mut self, text: &str, violations: &[Violation], truncated: bool) -> Cause {
        let (cause, turn) = if truncated {
            self.after_cut(text)
        } else {
            (
                Cause::Invalid,
                invalid_turn(text, violations, self.text_mode),
            )
        };
        self.turns.push(turn);
        cause
    }

    fn after_cut(&mut self, text: &str) -> (Cause, Turn) {
        let lead = "Your previous answer was cut off before the JSON was complete".to_string();
        let excerpts = excerpts(text, Problem::End);
        let runaway = cut::analyze(text).and_then(|c| c.runaway);
        let bounded = runaway.as_ref().and_then(|r| {
            let format = self.base.get_mut("format").filter(|f| f.is_object())?;
            bound::apply(format, r).map(|b| (r.pointer(), b))
        });
        if let Some((pointer, b)) = bounded {
            let at = shorten(if pointer.is_empty() { "/" } else { &pointer });
            tracing::info!(at = %at, seen = b.seen, bound = b.value, unit = b.unit(),
                "the answer ran away; bounded in the grammar");
            let turn = Turn {
                excerpts,
                lead,
                detail: Some(format!(
                    "{at} kept growing ({} {} before the cut)",
                    b.seen,
                    b.unit()
                )),
                instruction: format!(
                    "Answer again with complete JSON that matches the schema, \
                     with at most {} {} in {at}.",
                    b.value,
                    b.unit()
                ),
            };
            return (Cause::Runaway, turn);
        }
        self.raise_num_predict();
        let (lead, instruction) = if self.text_mode {
            (
                "Your previous answer was cut off".to_string(),
                "Answer again, complete and more briefly.",
            )
        } else {
            (
                lead,
                "Answer again with complete JSON that matches the schema, \
                 and answer more briefly.",
            )
        };
        let turn = Turn {
            excerpts,
            lead,
            detail: None,
            instruction: instruction.to_string(),
        };
        (Cause::Truncated, turn)
    }

    /// Double `num_predict` (from [`DEFAULT_NUM_PREDICT`] when unset).
    fn raise_num_predict(&mut self) {
        let options = self
            .base
            .entry("options")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(options) = options {
            let current = options
                .get("num_predict")
                .and_then(Value::as_i64)
                .filter(|n| *n > 0)
                .unwrap_or(DEFAULT_NUM_PREDICT);
            options.insert("num_predict".into(), json!(current.saturating_mul(2)));
        }
    }
}

pub(in crate::pipeline) fn invalid_turn(
    text: &str,
    violations: &[Violation],
    text_mode: bool,
) -> Turn {
    let problem = violations
        .first()
        .map_or(Problem::At(0), |v| excerpt::locate(text, &v.pointer));
    let (lead, detail) = if violations.is_empty() {
        ("Your previous answer was not valid JSON", None)
    } else {
        (
            "Your previous answer was invalid",
            Some(format_violations(violations, 3)),
        )
    };
    Turn {
        excerpts: excerpts(text, problem),
        lead: lead.to_string(),
        detail,
        instruction: if text_mode {
            "Call again, in the same form, with arguments that match the tool's parameters."
        } else {
            "Answer again with JSON that matches the schema."
        }
        .to_string(),
    }
}

/// Excerpts of `text` around `problem`, longest first (one when the text
/// is short).
fn excerpts(text: &str, problem: Problem) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(EXCERPT_SIZES.len());
    for max in EXCERPT_SIZES {
        let e = excerpt::excerpt(text, problem, max);
        if out.last().is_some_and(|l| l.len() <= e.len()) {
            continue;
        }
        out.push(e);
    }
    out.retain(|e| !e.is_empty());
    out
}

/// At most [`MAX_POINTER`] characters of `s`.
fn shorten(s: &str) -> String {
    match s.char_indices().nth(MAX_POINTER) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
