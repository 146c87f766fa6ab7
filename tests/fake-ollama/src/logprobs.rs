//! Token log-probabilities, as Ollama returns them when a request has `"logprobs": true`:
//! a `logprobs` list of `{"token", "logprob", "bytes", "top_logprobs"}` for the tokens each
//! chunk produced.
//!
//! - Tokens: the fake's own deterministic tokenizer ([`tokens`]): runs of ASCII letters and
//!   digits cut into pieces of at most 4 characters; every other character (space,
//!   punctuation, each non-ASCII character) is a token of its own. `bytes` are the token's
//!   UTF-8 bytes. Each chunk's text is tokenized on its own, so a chunk's tokens spell
//!   exactly that chunk's text, and a whole answer's tokens are the streamed ones in order.
//! - What is covered: every generated text in order: thinking, content, and for native tool
//!   calls the text a model would have written for them, one compact JSON object
//!   `{"name":…,"arguments":…}` per call, calls separated by `\n`, all on the chunk that
//!   carries the `tool_calls`.
//! - Probabilities: [`CONFIDENT`] (0.99) for every token, except tokens overlapping an
//!   occurrence of an unsure span ([`crate::Builder::unsure`],
//!   [`crate::FakeOllama::push_unsure`]) in the generated text (all segments concatenated),
//!   which get that span's probability (the lowest when several apply).
//! - `top_logprobs: N` (N > 0): N entries per token, the token itself first, then `alt1` …
//!   `alt{N-1}` with probability `min(p, 1 - p) / 2^k` (at least `1e-6 / 2^k`), so the
//!   list is sorted by logprob and never sums past 1.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use serde_json::{Map, Value, json};

use crate::lock;
use crate::wire::{ApiError, go_float};

/// The probability of every token outside an unsure span.
pub const CONFIDENT: f64 = 0.99;

/// Ollama's bound on `top_logprobs`.
const MAX_TOP: i64 = 20;

/// Text spans and the probability their tokens get.
pub(crate) type Spans = Vec<(String, f64)>;

/// The fake's tokenizer: the tokens of `text`, in order; they concatenate to `text`. Runs of
/// ASCII letters and digits are cut into pieces of at most 4 characters; every other
/// character is a token of its own. Each streamed chunk's text is tokenized on its own, so
/// an answer's tokens are those of its chunks (`"Ray"` + `"leigh"` → `Ray`, `leig`, `h`).
pub fn tokens(text: &str) -> Vec<&str> {
    ranges(text).into_iter().map(|r| &text[r]).collect()
}

fn ranges(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for (i, c) in text.char_indices() {
        if c.is_ascii_alphanumeric() {
            run = match run {
                Some((start, n)) if n < 4 => Some((start, n + 1)),
                Some((start, _)) => {
                    out.push(start..i);
                    Some((i, 1))
                }
                None => Some((i, 1)),
            };
            continue;
        }
        if let Some((start, _)) = run.take() {
            out.push(start..i);
        }
        out.push(i..i + c.len_utf8());
    }
    if let Some((start, _)) = run {
        out.push(start..text.len());
    }
    out
}

/// Whether a request asked for logprobs: `Some(top_logprobs)` when `logprobs` is true.
/// `go_type` names the Go request struct in type errors; `top_logprobs` outside 0–20 is
/// Ollama's 400 whether or not `logprobs` is set.
pub(crate) fn asked(v: &Value, go_type: &str) -> Result<Option<usize>, ApiError> {
    let type_error = |field: &str, kind: &str, want: &str| {
        ApiError::new(
            400,
            format!(
                "json: cannot unmarshal {kind} into Go struct field {go_type}.{field} of type {want}"
            ),
        )
    };
    let on = match v.get("logprobs") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(type_error("logprobs", kind(other), "bool")),
    };
    let top = match v.get("top_logprobs") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => n,
            None => return Err(type_error("top_logprobs", &format!("number {n}"), "int")),
        },
        Some(other) => return Err(type_error("top_logprobs", kind(other), "int")),
    };
    if !(0..=MAX_TOP).contains(&top) {
        return Err(ApiError::new(400, "top_logprobs must be between 0 and 20"));
    }
    Ok(on.then_some(top as usize))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        _ => "object",
    }
}

/// The text a model would have written for native tool calls (`{"id","function":{…}}`).
pub(crate) fn calls_text(calls: &[Value]) -> String {
    let one = |c: &Value| {
        json!({"name": c["function"]["name"], "arguments": c["function"]["arguments"]}).to_string()
    };
    calls.iter().map(one).collect::<Vec<_>>().join("\n")
}

/// The `logprobs` of each chunk, one list per text of `texts` (in generation order).
pub(crate) fn for_chunks(texts: &[&str], spans: &[(String, f64)], top: usize) -> Vec<Vec<Value>> {
    let whole: String = texts.concat();
    let marks: Vec<(Range<usize>, f64)> = spans
        .iter()
        .filter(|(needle, _)| !needle.is_empty())
        .flat_map(|(needle, p)| {
            whole
                .match_indices(needle.as_str())
                .map(move |(at, m)| (at..at + m.len(), *p))
        })
        .collect();
    let mut offset = 0;
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        let chunk = ranges(text).into_iter().map(|r| {
            let global = offset + r.start..offset + r.end;
            let p = marks
                .iter()
                .filter(|(m, _)| m.start < global.end && global.start < m.end)
                .map(|(_, p)| *p)
                .fold(CONFIDENT, f64::min);
            entry(&text[r], p, top)
        });
        out.push(chunk.collect());
        offset += text.len();
    }
    out
}

/// One token's `Logprob`: `token`, `logprob`, `bytes`, and `top_logprobs` when `top` > 0.
fn entry(token: &str, p: f64, top: usize) -> Value {
    let mut v = alternative(token, p);
    if top > 0 {
        let rest = p.min(1.0 - p).max(1e-6);
        let alts = (1..top).map(|k| alternative(&format!("alt{k}"), rest / f64::from(1u32 << k)));
        let list = std::iter::once(alternative(token, p)).chain(alts);
        let list: Vec<Value> = list.map(Value::Object).collect();
        v.insert("top_logprobs".into(), Value::Array(list));
    }
    Value::Object(v)
}

/// A `TokenLogprob`: `token`, `logprob`, and `bytes` unless the token is empty.
fn alternative(token: &str, p: f64) -> Map<String, Value> {
    let mut v = Map::new();
    v.insert("token".into(), json!(token));
    v.insert("logprob".into(), go_float(p.ln()));
    if !token.is_empty() {
        v.insert("bytes".into(), json!(token.as_bytes()));
    }
    v
}

/// Unsure spans: per model, and per-request overrides queued per model.
pub(crate) struct Unsure {
    model_wide: HashMap<String, Spans>,
    next: std::sync::Mutex<HashMap<String, VecDeque<Spans>>>,
}

impl Unsure {
    pub(crate) fn new(model_wide: Vec<(String, Spans)>) -> Self {
        let mut map: HashMap<String, Spans> = HashMap::new();
        for (model, spans) in model_wide {
            map.entry(model).or_default().extend(spans);
        }
        Self {
            model_wide: map,
            next: Default::default(),
        }
    }

    /// Queues the spans of one generation request of `model` (normalized).
    pub(crate) fn push(&self, model: String, spans: Spans) {
        lock(&self.next).entry(model).or_default().push_back(spans);
    }

    /// The spans of this generation request of `model`: the next queued list if any
    /// (consumed whether or not the request asks for logprobs, like a scripted reply), else
    /// the model's own.
    pub(crate) fn spans_for(&self, model: &str) -> Spans {
        let queued = lock(&self.next)
            .get_mut(model)
            .and_then(VecDeque::pop_front);
        queued.unwrap_or_else(|| self.model_wide.get(model).cloned().unwrap_or_default())
    }
}

/// Owned spans; panics on a probability outside (0, 1] (a mistake in a test's setup).
pub(crate) fn spans(list: &[(&str, f64)]) -> Spans {
    for (text, p) in list {
        assert!(
            *p > 0.0 && *p <= 1.0,
            "fake-ollama: the probability of {text:?} must be in (0, 1], not {p}"
        );
    }
    list.iter().map(|(t, p)| ((*t).to_owned(), *p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_cuts_runs_and_keeps_the_rest_single() {
        assert_eq!(
            tokens("Rayleigh scattering, 2024é!"),
            [
                "Rayl", "eigh", " ", "scat", "teri", "ng", ",", " ", "2024", "é", "!"
            ]
        );
        assert_eq!(tokens(""), Vec::<&str>::new());
        assert_eq!(tokens("ab"), ["ab"]);
    }

    #[test]
    fn spans_mark_every_overlapping_token_across_chunks() {
        let spans = vec![("Paris".to_owned(), 0.3), ("is".to_owned(), 0.5)];
        let out = for_chunks(&["It is Par", "is."], &spans, 0);
        let probs: Vec<(String, f64)> = out
            .iter()
            .flatten()
            .map(|e| {
                let p = e["logprob"].as_f64().unwrap().exp();
                (
                    e["token"].as_str().unwrap().to_owned(),
                    (p * 100.0).round() / 100.0,
                )
            })
            .collect();
        let want = [
            ("It", 0.99),
            (" ", 0.99),
            ("is", 0.5),
            (" ", 0.99),
            ("Par", 0.3),
            ("is", 0.3),
            (".", 0.99),
        ];
        let want: Vec<(String, f64)> = want.iter().map(|(t, p)| ((*t).to_owned(), *p)).collect();
        assert_eq!(probs, want);
        assert_eq!(out[0].len(), 5);
        assert!(out[0][0].get("top_logprobs").is_none());
    }

    #[test]
    fn alternatives_follow_the_token_in_order() {
        let e = entry("Par", 0.3, 3);
        let top = e["top_logprobs"].as_array().unwrap();
        let names: Vec<&str> = top.iter().map(|t| t["token"].as_str().unwrap()).collect();
        assert_eq!(names, ["Par", "alt1", "alt2"]);
        let lp: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
        assert!(lp.windows(2).all(|w| w[0] > w[1]), "{lp:?}");
        assert_eq!(
            top[0],
            json!({"token": "Par", "logprob": 0.3f64.ln(), "bytes": [80, 97, 114]})
        );
        let sure = entry("x", 1.0, 2);
        assert_eq!(sure["logprob"], json!(0));
        assert!(
            sure["top_logprobs"][1]["logprob"]
                .as_f64()
                .unwrap()
                .is_finite()
        );
    }

    #[test]
    fn request_fields_are_checked_like_ollama() {
        let ask = |v: Value| asked(&v, "ChatRequest").map_err(|e| e.msg);
        assert_eq!(ask(json!({})), Ok(None));
        assert_eq!(ask(json!({"top_logprobs": 3})), Ok(None));
        assert_eq!(ask(json!({"logprobs": true})), Ok(Some(0)));
        assert_eq!(
            ask(json!({"logprobs": true, "top_logprobs": 20})),
            Ok(Some(20))
        );
        let range = Err("top_logprobs must be between 0 and 20".to_owned());
        assert_eq!(ask(json!({"logprobs": true, "top_logprobs": 21})), range);
        assert_eq!(ask(json!({"top_logprobs": -1})), range);
        assert_eq!(
            ask(json!({"logprobs": "yes"})),
            Err("json: cannot unmarshal string into Go struct field ChatRequest.logprobs of type bool".to_owned())
        );
        assert_eq!(
            ask(json!({"top_logprobs": 2.5})),
            Err("json: cannot unmarshal number 2.5 into Go struct field ChatRequest.top_logprobs of type int".to_owned())
        );
    }
}
