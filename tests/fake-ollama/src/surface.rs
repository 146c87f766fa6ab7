//! What the OpenAI Responses and Anthropic Messages surfaces share. Ollama serves both as a
//! gin middleware in front of its chat handler: the middleware decodes and validates the
//! request (its errors are written by `c.AbortWithStatusJSON`: `application/json;
//! charset=utf-8`, no trailing newline), converts it to a chat request, and wraps the writer so
//! that every chat chunk becomes the surface's SSE events (`event: NAME\ndata: JSON\n\n`, one
//! flush per event) and every handler error is re-encoded in the surface's error shape by a
//! `json.Encoder` (`application/json`, trailing newline).
//!
//! Here the chat planning of [`crate::plan`] stands in for the chat handler: a surface turns
//! its request into an [`Input`], and renders the [`Plan`] chunk by chunk ([`Step`]) through a
//! stateful [`Converter`], or whole.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::catalog::Model;
use crate::native::{paced_body, whole};
use crate::plan::{self, Input, Plan, Prepared};
pub use crate::wire::go_float;
use crate::wire::{self, ApiError, JSON, JSON_UTF8, SSE, go_json, respond};
use crate::{Shared, faults, lock};

/// Where an error was raised, which decides how Ollama writes it.
#[derive(Clone, Copy)]
pub enum Raised {
    /// By the surface's middleware, before the chat handler runs.
    Middleware,
    /// By the chat handler, re-encoded by the surface's writer (`stream`: the client asked
    /// for a stream, so the stream headers were already set).
    Handler { stream: bool },
}

/// An error response: `body` is the surface's error object.
pub fn error_response(status: u16, body: &Value, raised: Raised) -> Response {
    match raised {
        Raised::Middleware => respond(status, JSON_UTF8, go_json(body)),
        Raised::Handler { stream } => {
            let mut b = go_json(body);
            b.push(b'\n');
            let mut r = respond(status, JSON, b);
            if stream {
                stream_headers(&mut r);
            }
            r
        }
    }
}

/// The headers both middlewares set when the client asks for a stream (the content type is
/// set per response).
fn stream_headers(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
}

/// The request body as gin's `ShouldBindJSON` sees it, decoding into the Go type `qualified`:
/// an empty body is `EOF`, `null` an empty object.
pub fn parse(body: &[u8], qualified: &str) -> Result<Map<String, Value>, ApiError> {
    if body.is_empty() {
        return Err(ApiError::new(400, "EOF"));
    }
    match wire::parse_json(body, qualified)? {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// Go's name for a JSON value's type in `cannot unmarshal X into …` errors.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A string field of a Go request struct (`Type.field`): absent and `null` are empty.
pub fn string_field(m: &Map<String, Value>, field: &str, go: &str) -> Result<String, ApiError> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(ApiError::new(
            400,
            format!(
                "json: cannot unmarshal {} into Go struct field {go}.{field} of type string",
                json_kind(v)
            ),
        )),
    }
}

/// One SSE event as Ollama writes it.
pub fn event<T: Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, data: &T) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend(go_json(data));
    out.extend_from_slice(b"\n\n");
}

/// A value as Go marshals a `map[string]any`: object keys sorted at every level.
pub fn go_map(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, go_map(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(go_map).collect()),
        other => other,
    }
}

/// A JSON value after a round trip through Go's `any`: numbers become `float64`, so
/// integral ones print without a fraction (`1.0` → `1`).
pub fn go_any(v: Value) -> Value {
    match v {
        Value::Number(n) => go_float(n.as_f64().unwrap_or_default()),
        Value::Array(a) => Value::Array(a.into_iter().map(go_any).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, go_any(v))).collect()),
        other => other,
    }
}

/// One chunk of a streamed chat answer, in the order `/api/chat` writes them: the pieces
/// (thinking or content), then the tool calls in one chunk, then the done chunk.
pub enum Step<'a> {
    Thinking(&'a str),
    Text(&'a str),
    Calls(&'a [Value]),
    Done,
}

impl Plan {
    /// Chunk `i` of the streamed answer, `None` past the done chunk.
    pub fn step(&self, i: usize) -> Option<Step<'_>> {
        let n = self.pieces.len();
        let calls = usize::from(!self.tool_calls.is_empty());
        match self.pieces.get(i) {
            Some(p) if p.thinking => Some(Step::Thinking(&p.text)),
            Some(p) => Some(Step::Text(&p.text)),
            None if calls == 1 && i == n => Some(Step::Calls(&self.tool_calls)),
            None if i == n + calls => Some(Step::Done),
            None => None,
        }
    }

    /// The answer to an empty conversation (`done_reason` `load` or `unload`): nothing
    /// generated, no metrics.
    fn idle(model: Model, reason: &'static str) -> Self {
        Plan {
            model,
            pieces: Vec::new(),
            tool_calls: Vec::new(),
            done_reason: reason,
            first_byte: Duration::ZERO,
            delay: Duration::ZERO,
            cut_after: None,
            no_done: false,
            prompt_tokens: 0,
            started: Instant::now(),
            logprobs: Vec::new(),
        }
    }

    fn is_idle(&self) -> bool {
        matches!(self.done_reason, "load" | "unload")
    }

    /// The final chunk's `prompt_eval_count` and `eval_count` (both 0 for an idle answer).
    pub fn usage(&self) -> (u64, u64) {
        if self.is_idle() {
            (0, 0)
        } else {
            (self.prompt_tokens, self.eval_count())
        }
    }
}

/// A surface's stream converter: turns each chat chunk into that surface's events.
pub trait Converter: Send + 'static {
    fn process(&mut self, plan: &Plan, step: Step<'_>) -> Vec<u8>;
}

/// Renders chunk `i` of a plan through `conv` (chunks are rendered once each, in order).
pub fn render<C: Converter>(
    conv: C,
) -> impl Fn(&Plan, usize) -> Option<Bytes> + Send + Sync + 'static {
    let conv = Mutex::new(conv);
    move |p, i| {
        let step = p.step(i)?;
        Some(Bytes::from(lock(&conv).process(p, step)))
    }
}

/// The 200 answer of a planned generation: streamed through `render`, or `whole` (built only
/// when needed), with the `slow-*`, `stream-cut`, `dribble` and `mid-cut` faults applied as on
/// every other endpoint (the `slow-first-byte` delay first).
pub async fn reply<R, W>(
    st: &Arc<Shared>,
    plan: Plan,
    options: &Map<String, Value>,
    stream: bool,
    render: R,
    whole_body: W,
) -> Response
where
    R: Fn(&Plan, usize) -> Option<Bytes> + Send + Sync + 'static,
    W: FnOnce(&Plan) -> Vec<u8>,
{
    if plan.is_idle() {
        return immediate(plan, stream, render, whole_body);
    }
    if plan.first_byte > Duration::ZERO {
        tokio::time::sleep(plan.first_byte).await;
    }
    let ctype = if stream { SSE } else { JSON };
    let mut r = match plan.model.base() {
        "mid-cut" => {
            let lines = stream.then(|| (0..).map_while(|i| render(&plan, i)).collect());
            let body = if stream {
                Vec::new()
            } else {
                whole_body(&plan)
            };
            faults::mid_cut(&st.counters, options, ctype, lines, body)
        }
        "dribble" => {
            let body = if stream {
                Vec::new()
            } else {
                whole_body(&plan)
            };
            faults::dribble(&st.counters, plan, options, stream, ctype, body, render).await
        }
        _ if stream => respond(200, SSE, paced_body(plan, st.counters.clone(), render)),
        _ => {
            let body = whole_body(&plan);
            whole(&plan, &st.counters, JSON, body).await
        }
    };
    if stream {
        stream_headers(&mut r);
    }
    r
}

/// The answer to an empty conversation, written at once.
fn immediate<R, W>(plan: Plan, stream: bool, render: R, whole_body: W) -> Response
where
    R: Fn(&Plan, usize) -> Option<Bytes>,
    W: FnOnce(&Plan) -> Vec<u8>,
{
    if !stream {
        return respond(200, JSON, whole_body(&plan));
    }
    let body: Vec<u8> = (0..).map_while(|i| render(&plan, i)).flatten().collect();
    let mut r = respond(200, SSE, body);
    stream_headers(&mut r);
    r
}

/// The plan for a request: its generation, or the idle answer to an empty conversation.
pub fn planned(st: &Shared, input: &Input) -> Result<Plan, ApiError> {
    match plan::prepare(st, input, true)? {
        Prepared::Run(p) => Ok(*p),
        Prepared::Load(reason) => st
            .find_model(&input.model)
            .map(|m| Plan::idle(m, reason))
            .ok_or_else(|| ApiError::new(404, format!("model '{}' not found", input.model))),
    }
}

/// Go's `json.Encoder` output: the value and a newline.
pub fn encoded<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    let mut b = go_json(v);
    b.push(b'\n');
    b
}

/// Unix seconds now.
pub fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}
