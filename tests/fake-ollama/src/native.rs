//! `POST /api/chat` and `POST /api/generate`: request decoding, NDJSON streaming with one
//! flushed line per chunk, the non-streaming merged object, and the exact field order and
//! omitted-when-zero metrics of Ollama's `ChatResponse` / `GenerateResponse`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use futures_util::{StreamExt, stream};
use serde::Serialize;
use serde_json::Value;

use crate::logprobs;
use crate::plan::{self, Input, Plan, Prepared};
use crate::wire::{self, ApiError, ByteStream, JSON_UTF8, NDJSON, Tracked, go_json, respond};
use crate::{Counters, Shared};

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Serialize, Default)]
pub struct Metrics {
    #[serde(skip_serializing_if = "is_zero")]
    pub total_duration: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub load_duration: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub prompt_eval_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub prompt_eval_duration: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub eval_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub eval_duration: u64,
}

impl Metrics {
    pub fn of(p: &Plan) -> Self {
        let load = 2_051_375;
        let prompt = p.prompt_tokens * 1_250_000;
        let eval = p.eval_count() * 15_000_000;
        let elapsed = p.started.elapsed().as_nanos() as u64;
        Metrics {
            total_duration: elapsed + load + prompt + eval,
            load_duration: load,
            prompt_eval_count: p.prompt_tokens,
            prompt_eval_duration: prompt,
            eval_count: p.eval_count(),
            eval_duration: eval,
        }
    }
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    thinking: &'a str,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tool_calls: &'a [Value],
}

#[derive(Serialize)]
struct ChatLine<'a> {
    model: &'a str,
    created_at: String,
    message: Message<'a>,
    done: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    done_reason: &'a str,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    logprobs: &'a [Value],
    #[serde(flatten)]
    metrics: Metrics,
}

#[derive(Serialize)]
struct GenerateLine<'a> {
    model: &'a str,
    created_at: String,
    response: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    thinking: &'a str,
    done: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    done_reason: &'a str,
    #[serde(skip_serializing_if = "<[u64]>::is_empty")]
    context: &'a [u64],
    #[serde(flatten)]
    metrics: Metrics,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    logprobs: &'a [Value],
}

fn line<T: Serialize>(v: &T) -> Bytes {
    let mut b = go_json(v);
    b.push(b'\n');
    Bytes::from(b)
}

/// A streamed body: `render(plan, i)` gives event `i` (or `None` when finished); events are
/// spaced by `plan.delay`, and `plan.cut_after` ends the body with an error (dropped connection).
pub fn paced_body<F>(plan: Plan, counters: Arc<Counters>, render: F) -> axum::body::Body
where
    F: Fn(&Plan, usize) -> Option<Bytes> + Send + Sync + 'static,
{
    let s = stream::unfold((plan, render, 0usize), |(plan, render, i)| async move {
        if plan.cut_after == Some(i) {
            // Let the chunks already written reach the socket before the connection drops.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let err = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "stream cut");
            return Some((Err(err), (plan, render, usize::MAX)));
        }
        if i == usize::MAX {
            return None;
        }
        if i > 0 && plan.delay > Duration::ZERO {
            tokio::time::sleep(plan.delay).await;
        }
        let b = render(&plan, i)?;
        Some((Ok(b), (plan, render, i + 1)))
    });
    let s: ByteStream = Box::pin(s);
    Tracked::new(s, counters).body()
}

/// The body of a non-streaming response, or (for `stream-cut`) half of it then a dropped connection.
pub async fn whole(
    plan: &Plan,
    counters: &Arc<Counters>,
    ctype: &'static str,
    body: Vec<u8>,
) -> Response {
    let steps = plan.pieces.len() as u32;
    if plan.delay > Duration::ZERO && steps > 1 {
        tokio::time::sleep(plan.delay * (steps - 1)).await;
    }
    if plan.cut_after.is_some() {
        let half = Bytes::from(body[..body.len() / 2].to_vec());
        let cut = stream::once(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "stream cut",
            ))
        });
        let s: ByteStream = Box::pin(stream::iter(vec![Ok(half)]).chain(cut));
        return respond(200, ctype, Tracked::new(s, counters.clone()).body());
    }
    respond(200, ctype, body)
}

fn decode_chat(v: &Value, go_type: &str) -> Result<(Input, bool), ApiError> {
    let model = match v.get("model") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ApiError::new(
                400,
                "json: cannot unmarshal number into Go struct field ChatRequest.model of type string",
            ));
        }
    };
    let stream = v.get("stream").and_then(Value::as_bool).unwrap_or(true);
    let logprobs = logprobs::asked(v, go_type)?;
    let input = Input {
        model,
        messages: Some(
            v.get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        ),
        prompt: v.get("prompt").and_then(Value::as_str).map(str::to_owned),
        tools: v
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        format: v.get("format").cloned(),
        think: v.get("think").cloned(),
        options: v
            .get("options")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        keep_alive_zero: v
            .get("keep_alive")
            .is_some_and(|k| k == 0 || k == "0" || k == "0s"),
        raw: v.clone(),
        logprobs,
    };
    Ok((input, stream))
}

pub async fn chat(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    generation(st, body, true).await
}

pub async fn generate(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    generation(st, body, false).await
}

/// Ollama's answer when its queue is full (`OLLAMA_MAX_QUEUE`), with its two spaces.
pub const BUSY: &str = "server busy, please try again.  maximum pending requests exceeded";

async fn generation(st: Arc<Shared>, body: Bytes, is_chat: bool) -> Response {
    if st.busy.load(std::sync::atomic::Ordering::Relaxed) {
        return ApiError::new(503, BUSY).native(false);
    }
    let go_type = if is_chat {
        "ChatRequest"
    } else {
        "GenerateRequest"
    };
    let (mut input, stream) =
        match wire::parse_body(&body, go_type).and_then(|v| decode_chat(&v, go_type)) {
            Ok(x) => x,
            Err(e) => return e.native(false),
        };
    if !is_chat {
        input.messages = None;
        input.tools.clear();
    }
    let plan = match plan::prepare(&st, &input, is_chat) {
        Ok(Prepared::Run(p)) => *p,
        Ok(Prepared::Load(reason)) => return load_reply(&input.model, reason, is_chat),
        Err(e) => return e.native(stream),
    };
    if plan.first_byte > Duration::ZERO {
        tokio::time::sleep(plan.first_byte).await;
    }
    let model = input.model;
    let raw = input
        .raw
        .get("raw")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let with_tools = !input.tools.is_empty();
    match plan.model.base() {
        "dribble" | "mid-cut" => {
            return crate::faults::reply(&st, plan, &input.options, model, stream, is_chat, raw)
                .await;
        }
        _ => {}
    }
    if stream {
        let body = if is_chat {
            paced_body(plan, st.counters.clone(), move |p, i| {
                chat_event(&model, p, i)
            })
        } else {
            paced_body(plan, st.counters.clone(), move |p, i| {
                generate_event(&model, p, i, raw)
            })
        };
        return respond(200, NDJSON, body);
    }
    let content = plan.content();
    let thinking = plan.thinking();
    let logprobs = plan.all_logprobs();
    let bytes = if is_chat {
        let calls: &[Value] = if with_tools { &plan.tool_calls } else { &[] };
        let msg = Message {
            role: "assistant",
            content: &content,
            thinking: &thinking,
            tool_calls: calls,
        };
        go_json(&ChatLine {
            model: &model,
            created_at: wire::now(),
            message: msg,
            done: !plan.no_done,
            done_reason: if plan.no_done { "" } else { plan.done_reason },
            logprobs: &logprobs,
            metrics: Metrics::of(&plan),
        })
    } else {
        let ctx = context(&plan, raw);
        go_json(&GenerateLine {
            model: &model,
            created_at: wire::now(),
            response: &content,
            thinking: &thinking,
            done: !plan.no_done,
            done_reason: if plan.no_done { "" } else { plan.done_reason },
            context: &ctx,
            metrics: Metrics::of(&plan),
            logprobs: &logprobs,
        })
    };
    whole(&plan, &st.counters, JSON_UTF8, bytes).await
}

fn load_reply(model: &str, reason: &str, is_chat: bool) -> Response {
    let body = if is_chat {
        let msg = Message {
            role: "assistant",
            content: "",
            thinking: "",
            tool_calls: &[],
        };
        let l = ChatLine {
            model,
            created_at: wire::now(),
            message: msg,
            done: true,
            done_reason: reason,
            logprobs: &[],
            metrics: Metrics::default(),
        };
        go_json(&l)
    } else {
        let l = GenerateLine {
            model,
            created_at: wire::now(),
            response: "",
            thinking: "",
            done: true,
            done_reason: reason,
            context: &[],
            metrics: Metrics::default(),
            logprobs: &[],
        };
        go_json(&l)
    };
    respond(200, JSON_UTF8, body)
}

pub(crate) fn chat_event(model: &str, p: &Plan, i: usize) -> Option<Bytes> {
    let n = p.pieces.len();
    let has_calls = !p.tool_calls.is_empty();
    let (message, done) = if let Some(piece) = p.pieces.get(i) {
        let (content, thinking) = if piece.thinking {
            ("", piece.text.as_str())
        } else {
            (piece.text.as_str(), "")
        };
        (
            Message {
                role: "assistant",
                content,
                thinking,
                tool_calls: &[],
            },
            false,
        )
    } else if has_calls && i == n {
        (
            Message {
                role: "assistant",
                content: "",
                thinking: "",
                tool_calls: &p.tool_calls,
            },
            false,
        )
    } else if i == n + usize::from(has_calls) && !p.no_done {
        (
            Message {
                role: "assistant",
                content: "",
                thinking: "",
                tool_calls: &[],
            },
            true,
        )
    } else {
        return None;
    };
    let metrics = if done {
        Metrics::of(p)
    } else {
        Metrics::default()
    };
    let done_reason = if done { p.done_reason } else { "" };
    Some(line(&ChatLine {
        model,
        created_at: wire::now(),
        message,
        done,
        done_reason,
        logprobs: p.chunk_logprobs(i),
        metrics,
    }))
}

fn context(p: &Plan, raw: bool) -> Vec<u64> {
    if raw {
        return Vec::new();
    }
    (0..p.prompt_tokens + p.eval_count())
        .map(|i| 128_000 + i % 256)
        .collect()
}

pub(crate) fn generate_event(model: &str, p: &Plan, i: usize, raw: bool) -> Option<Bytes> {
    let n = p.pieces.len();
    if let Some(piece) = p.pieces.get(i) {
        let (response, thinking) = if piece.thinking {
            ("", piece.text.as_str())
        } else {
            (piece.text.as_str(), "")
        };
        let l = GenerateLine {
            model,
            created_at: wire::now(),
            response,
            thinking,
            done: false,
            done_reason: "",
            context: &[],
            metrics: Metrics::default(),
            logprobs: p.chunk_logprobs(i),
        };
        return Some(line(&l));
    }
    if i != n || p.no_done {
        return None;
    }
    let ctx = context(p, raw);
    let l = GenerateLine {
        model,
        created_at: wire::now(),
        response: "",
        thinking: "",
        done: true,
        done_reason: p.done_reason,
        context: &ctx,
        metrics: Metrics::of(p),
        logprobs: &[],
    };
    Some(line(&l))
}
