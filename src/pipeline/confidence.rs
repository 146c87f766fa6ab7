//! How sure the model was of an answer, where a policy asks
//! (`confidence:`, a fallback or `validate.on_low_confidence` acting on
//! it): the request asks the upstream for token probabilities, each
//! answer is scored ([`crate::confidence`]) by what it expected, and the
//! probabilities are taken out again unless the client asked for them.
//!
//! ```text
//! ask(body)                     logprobs: true, top_logprobs: 3 (the client's own kept)
//! score(expect, answer)         the envelope's calls or answer | native/text calls | text
//! strip(answer)                 logprobs removed, unless the client asked
//! report                        X-Augur-Confidence: 0.93 | unknown, per call; done chunk fields
//! ```

use crate::pipeline::job::Marks;
use http::HeaderValue;
use serde_json::{Map, Value, json};

use crate::{
    confidence::{self, CallScore, Confidence, Score, Tokens},
    tools::ToolCall,
};

use super::job::{Expect, Interp};

/// The tokens of a whole answer (its `logprobs`).
pub(crate) fn tokens_of(answer: &Value) -> Tokens {
    let mut tokens = Tokens::default();
    if let Some(lp) = answer.get("logprobs") {
        tokens.extend(lp);
    }
    tokens
}

/// Score an answer read under `expect` (`interp`: what was read of it).
pub(crate) fn score(
    expect: &Expect,
    tokens: &Tokens,
    response: &Value,
    interp: &Interp,
) -> Option<Confidence> {
    match expect {
        Expect::Tools { text: Some(_), .. } => confidence::of_calls(tokens, &pairs(&interp.calls)),
        Expect::Tools { .. } | Expect::Think { .. } => confidence::of_envelope(tokens),
        Expect::Json | Expect::Schema(_) => confidence::of_json(tokens),
        Expect::Text => score_native(tokens, response),
    }
}

/// Score a streamed answer read under `expect` (`calls`: the calls it
/// made, in order).
pub(crate) fn score_stream(
    expect: &Expect,
    tokens: &Tokens,
    calls: &[ToolCall],
) -> Option<Confidence> {
    match expect {
        Expect::Tools { text: Some(_), .. } => confidence::of_calls(tokens, &pairs(calls)),
        Expect::Tools { .. } | Expect::Think { .. } => confidence::of_envelope(tokens),
        Expect::Json | Expect::Schema(_) => confidence::of_json(tokens),
        Expect::Text if calls.is_empty() => confidence::of_text(tokens),
        Expect::Text => confidence::of_calls(tokens, &pairs(calls)),
    }
}

/// Score a native-tools model's answer: its calls, found in the text the
/// tokens spell, or its text when it made none.
pub(crate) fn score_native(tokens: &Tokens, response: &Value) -> Option<Confidence> {
    let calls: Vec<(String, Value)> = response
        .pointer("/message/tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = c.get("function").unwrap_or(c);
                    let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
                    (
                        name.to_string(),
                        f.get("arguments").cloned().unwrap_or(json!({})),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    match calls.is_empty() {
        true => confidence::of_text(tokens),
        false => confidence::of_calls(tokens, &calls),
    }
}

fn pairs(calls: &[ToolCall]) -> Vec<(String, Value)> {
    calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

/// Count and trace the confidence of an answer given to the client:
/// `augur_confidence{model, outcome}` (`answered`: the requested model's
/// answer; `fallback`: a fallback model's), `augur_confidence_unknown_total`
/// when the upstream returned no probabilities, and the request span's
/// `augur.confidence`.
pub(crate) fn observe(
    model: &str,
    c: Option<&Confidence>,
    outcome: &'static str,
    span: Option<&tracing::Span>,
) {
    let model = crate::telemetry::genai::model_label(model);
    match c {
        Some(c) => metrics::histogram!("augur_confidence", "model" => model.to_string(), "outcome" => outcome)
            .record(c.answer.min),
        None => metrics::counter!("augur_confidence_unknown_total", "model" => model.to_string())
            .increment(1),
    }
    if let Some(span) = span {
        crate::telemetry::spans::record_confidence(span, c.map(|c| c.answer.min));
    }
}

/// `X-Augur-Confidence`: the answer's confidence to two decimals, or
/// `unknown` when the upstream returned no probabilities.
pub(crate) fn header(c: Option<&Confidence>) -> HeaderValue {
    match c {
        Some(c) => HeaderValue::from_str(&format!("{:.2}", c.answer.min))
            .unwrap_or(HeaderValue::from_static("unknown")),
        None => HeaderValue::from_static("unknown"),
    }
}

/// `X-Augur-Confidence-Calls`: each call's confidence,
/// `name=0.93, name=0.41`.
pub(crate) fn calls_header(c: &Confidence) -> Option<HeaderValue> {
    if c.calls.is_empty() {
        return None;
    }
    let text: Vec<String> = c
        .calls
        .iter()
        .map(|call| format!("{}={:.2}", call.name, call.score.min))
        .collect();
    Some(crate::wire::header_text(&text.join(", ")))
}

/// The done chunk of a stream this job scores, with its confidence
/// (`tokens`: the stream's; `score`: how its answer is read): counted,
/// traced, and said in the chunk.
pub(crate) fn end_stream(
    job: &super::job::Job,
    tokens: &Tokens,
    score: impl FnOnce(&Tokens) -> Option<Confidence>,
    done: &mut Value,
) {
    let probs = job.ctx.probs;
    if probs.policy.is_none() {
        return;
    }
    let c = score(tokens);
    let (model, outcome) = match &job.answered {
        Some(a) => (a.model.as_str(), "fallback"),
        None => (
            job.body.get("model").and_then(Value::as_str).unwrap_or(""),
            "answered",
        ),
    };
    let span = job.ctx.timing.as_ref().map(|t| t.trace());
    observe(model, c.as_ref(), outcome, span);
    let (_, below) = probs.report(c.clone());
    if let Value::Object(f) = done {
        done_fields(c.as_ref(), f);
        if let Some(below) = below {
            Marks::on(f).confidence_below(json!(below));
        }
    }
}

/// The done chunk's `augur_confidence` (a number, or `"unknown"`) and
/// `augur_confidence_calls` (each call's signals and weakest token).
pub(crate) fn done_fields(c: Option<&Confidence>, done: &mut Map<String, Value>) {
    let mut marks = Marks::on(done);
    let Some(c) = c else {
        marks.confidence(json!("unknown"));
        return;
    };
    marks.confidence(json!(round(c.answer.min)));
    if !c.calls.is_empty() {
        marks.confidence_calls(c.calls.iter().map(call_json).collect());
    }
}

fn call_json(c: &CallScore) -> Value {
    let mut v = score_json(&c.score);
    if let Value::Object(m) = &mut v {
        m.insert("name".into(), json!(c.name));
    }
    v
}

/// A score's signals and its weakest token with the model's alternatives.
pub(crate) fn score_json(s: &Score) -> Value {
    let alternatives: Vec<Value> = s
        .weakest
        .alternatives
        .iter()
        .map(|(t, p)| json!({"token": t, "prob": round(*p)}))
        .collect();
    json!({
        "min": round(s.min),
        "mean": round(s.mean),
        "unsure_tokens": s.unsure,
        "tokens": s.tokens,
        "weakest": {"token": s.weakest.token, "prob": round(s.weakest.prob),
            "alternatives": alternatives},
    })
}

fn round(p: f64) -> f64 {
    (p * 1000.0).round() / 1000.0
}
