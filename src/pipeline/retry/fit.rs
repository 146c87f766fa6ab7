//! Fitting a retry into the model's context: the request as the client
//! sent it (augur's own instruction included) always goes; the feedback
//! turns are added only as far as they fit, oldest dropped first, then the
//! newest one's excerpt shortened and dropped, then its details, leaving
//! the one-line instruction to answer again.
//!
//! Tokens are estimated conservatively from bytes ([`BYTES_PER_TOKEN`]);
//! the context is the request's `num_ctx`, else the Modelfile's, else
//! Ollama's default capped by the model's trained context length.

use serde_json::{Map, Value, json};

use super::super::plan::Route;
use crate::upstream::capabilities::ModelContext;

/// Ollama's context when neither the request nor the Modelfile sets
/// `num_ctx`.
pub(crate) const DEFAULT_NUM_CTX: u64 = 4096;
/// Bytes per token assumed: fewer than most tokenizers average, so the
/// estimate errs on the side of more tokens.
pub(crate) const BYTES_PER_TOKEN: u64 = 3;
/// Tokens a chat template adds around each message.
const MESSAGE_OVERHEAD: u64 = 8;

/// One round of feedback: what the model answered (an excerpt) and what
/// was wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    /// Excerpts of the failed answer, longest first (each shorter one is
    /// tried when the longer does not fit).
    pub excerpts: Vec<String>,
    /// What happened ("Your previous answer was invalid").
    pub lead: String,
    /// The particulars (violations, the part that ran away); dropped last.
    pub detail: Option<String>,
    /// What to do now; always sent.
    pub instruction: String,
}

impl Turn {
    /// The user message: the lead, the detail when kept, the instruction.
    pub(crate) fn message(&self, detail: bool) -> String {
        match self.detail.as_deref().filter(|_| detail) {
            Some(d) => format!("{}: {d}. {}", self.lead, self.instruction),
            None => format!("{}. {}", self.lead, self.instruction),
        }
    }
}

/// How much of a turn is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    /// Index into [`Turn::excerpts`]; `None` = no excerpt.
    excerpt: Option<usize>,
    detail: bool,
}

/// The context to fit, in tokens: the request's `num_ctx`, else the
/// Modelfile's, else [`DEFAULT_NUM_CTX`] capped by the model's own.
pub(crate) fn context_of(
    shown: Option<&ModelContext>,
    options: Option<&Map<String, Value>>,
) -> u64 {
    let asked = options
        .and_then(|o| o.get("num_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0);
    asked
        .or_else(|| shown.and_then(|s| s.num_ctx))
        .unwrap_or_else(|| {
            shown
                .and_then(|s| s.context_length)
                .map_or(DEFAULT_NUM_CTX, |c| c.min(DEFAULT_NUM_CTX))
        })
}

/// Tokens of `context` the prompt may take: what the answer may need is
/// kept free (`num_predict`, at most half; a quarter when unset).
pub(crate) fn prompt_budget(context: u64, options: Option<&Map<String, Value>>) -> u64 {
    let predict = options
        .and_then(|o| o.get("num_predict"))
        .and_then(Value::as_i64)
        .filter(|n| *n > 0)
        .map(|n| n.unsigned_abs());
    let reserve = match predict {
        Some(n) => n.min(context / 2),
        None => context / 4,
    };
    context - reserve
}

/// Estimated tokens of `bytes` of text.
pub(crate) fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Estimated tokens of the prompt of `body` (images aside: they are not
/// text, and a model counts them its own way).
pub(crate) fn body_tokens(route: Route, body: &Map<String, Value>) -> u64 {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map_or(0, str::len);
    match route {
        Route::Chat => body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(0, |messages| {
                messages
                    .iter()
                    .map(|m| {
                        let calls = m.get("tool_calls").map_or(0, crate::wire::json_len);
                        MESSAGE_OVERHEAD
                            + tokens(text(m.get("content")) + text(m.get("thinking")) + calls)
                    })
                    .sum()
            }),
        Route::Generate => {
            MESSAGE_OVERHEAD + tokens(text(body.get("prompt")) + text(body.get("system")))
        }
    }
}

/// `base` with as much of `turns` (oldest first) as fits in `context`
/// tokens (`None` = no limit known: all of it).
pub(crate) fn compose(
    route: Route,
    base: &Map<String, Value>,
    turns: &[Turn],
    context: Option<u64>,
) -> Map<String, Value> {
    let Some((newest, older)) = turns.split_last() else {
        return base.clone();
    };
    let full = Shape {
        excerpt: (!newest.excerpts.is_empty()).then_some(0),
        detail: true,
    };
    let Some(context) = context else {
        return with_turns(route, base, older, newest, full);
    };
    let budget = prompt_budget(context, base.get("options").and_then(Value::as_object));
    let fits = |b: &Map<String, Value>| body_tokens(route, b) <= budget;
    // Every turn, then fewer older ones, then less of the newest.
    for skip in 0..=older.len() {
        let body = with_turns(route, base, &older[skip..], newest, full);
        if fits(&body) {
            return body;
        }
    }
    let mut shapes: Vec<Shape> = (1..newest.excerpts.len())
        .map(|i| Shape {
            excerpt: Some(i),
            detail: true,
        })
        .collect();
    shapes.push(Shape {
        excerpt: None,
        detail: true,
    });
    for shape in shapes {
        let body = with_turns(route, base, &[], newest, shape);
        if fits(&body) {
            return body;
        }
    }
    let bare = Shape {
        excerpt: None,
        detail: false,
    };
    with_turns(route, base, &[], newest, bare)
}

/// `base` with `older` turns whole and `newest` as `shape` says.
fn with_turns(
    route: Route,
    base: &Map<String, Value>,
    older: &[Turn],
    newest: &Turn,
    shape: Shape,
) -> Map<String, Value> {
    let mut body = base.clone();
    let all = Shape {
        excerpt: Some(0),
        detail: true,
    };
    let sent = older
        .iter()
        .map(|t| (t, all))
        .chain(std::iter::once((newest, shape)));
    match route {
        Route::Chat => {
            if let Some(Value::Array(messages)) = body.get_mut("messages") {
                for (turn, shape) in sent {
                    let excerpt = shape.excerpt.and_then(|i| turn.excerpts.get(i));
                    if let Some(excerpt) = excerpt {
                        messages.push(json!({"role": "assistant", "content": excerpt}));
                    }
                    messages.push(json!({"role": "user", "content": turn.message(shape.detail)}));
                }
            }
        }
        Route::Generate => {
            let mut prompt = body
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            for (turn, shape) in sent {
                prompt.push_str("\n\n");
                prompt.push_str(&turn.message(shape.detail));
            }
            body.insert("prompt".into(), Value::String(prompt));
        }
    }
    body
}
