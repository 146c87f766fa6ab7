//! The `dribble` and `mid-cut` fault models, and the listing faults.
//!
//! - `dribble`: a slow answer whose every response is logged ([`BodyLog`]): when the request
//!   came in, when its response ended (ran to its end, or was dropped because the client went
//!   away), and how many pieces it wrote. The content is the last user message (or a scripted
//!   reply) in 2-character pieces, `options.interval_ms` (default 20 ms) apart, after
//!   `options.head_ms` (default 0) before the response head. A non-streaming body is sent in
//!   as many pieces, at the same pace, its head first.
//! - `mid-cut`: a stream writes two lines, then half of the third line, and the connection is
//!   dropped. A non-streaming body (declaring its full `Content-Length` unless
//!   `options.declare_length` is false) writes its first `options.cut_bytes` bytes (default
//!   half), waits `options.cut_ms` (default 50 ms), and the connection is dropped.
//! - listing faults ([`ListingFault`], set with `Builder::listing_fault`): `/api/tags`,
//!   `/api/ps` and `/v1/models` send their head and then stall, or trickle their body forever.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use serde_json::{Map, Value, json};

use crate::plan::Plan;
use crate::wire::{ByteStream, JSON_UTF8, NDJSON, go_json, now, respond};
use crate::{Counters, Shared, lock};

/// One `dribble` response as the fake saw it.
#[derive(Debug, Clone)]
pub struct BodyLog {
    pub model: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// When the request reached the handler.
    pub started: Instant,
    /// When the response ended: written to its end, or dropped (`completed` false).
    pub ended: Option<Instant>,
    /// Pieces written so far.
    pub pieces: u64,
    pub completed: bool,
}

/// Keeps one [`BodyLog`] up to date; dropping it before [`Logged::complete`] marks the
/// response as abandoned.
struct Logged {
    counters: Arc<Counters>,
    index: usize,
}

impl Logged {
    fn start(counters: &Arc<Counters>, model: &str, stream: bool) -> Self {
        let mut logs = lock(&counters.bodies);
        logs.push(BodyLog {
            model: model.to_owned(),
            stream,
            started: Instant::now(),
            ended: None,
            pieces: 0,
            completed: false,
        });
        Self {
            counters: counters.clone(),
            index: logs.len() - 1,
        }
    }
    fn piece(&self) {
        if let Some(log) = lock(&self.counters.bodies).get_mut(self.index) {
            log.pieces += 1;
        }
    }
    fn complete(&self) {
        if let Some(log) = lock(&self.counters.bodies).get_mut(self.index) {
            log.completed = true;
            log.ended.get_or_insert_with(Instant::now);
        }
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if let Some(log) = lock(&self.counters.bodies).get_mut(self.index) {
            log.ended.get_or_insert_with(Instant::now);
        }
    }
}

/// A body stream that logs its pieces and its end.
struct LoggedStream {
    inner: ByteStream,
    log: Logged,
}

impl Stream for LoggedStream {
    type Item = Result<Bytes, std::io::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let r = self.inner.as_mut().poll_next(cx);
        match &r {
            Poll::Ready(Some(Ok(_))) => self.log.piece(),
            Poll::Ready(None) => self.log.complete(),
            _ => {}
        }
        r
    }
}

/// How `/api/tags`, `/api/ps` and `/v1/models` misbehave once their head is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingFault {
    /// The head (200, JSON), the first bytes of the body, then nothing, the connection open.
    StallAfterHead,
    /// The head, then the body one byte every 50 ms, and past its last-but-one byte a space
    /// every 50 ms forever: the body never ends.
    Trickle,
}

/// Bytes a stalled listing sends before it stalls.
const STALL_PREFIX: usize = 12;
/// The pace of a trickled listing.
const TRICKLE_EVERY: Duration = Duration::from_millis(50);

/// `listing` (a complete listing answer) with `fault` applied to its body.
pub async fn listing(fault: Option<ListingFault>, listing: Response) -> Response {
    let Some(fault) = fault else {
        return listing;
    };
    let (mut parts, body) = listing.into_parts();
    let Ok(whole) = axum::body::to_bytes(body, 1 << 20).await else {
        return crate::wire::empty(500);
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    let stream: ByteStream = match fault {
        ListingFault::StallAfterHead => {
            let first = whole.slice(..STALL_PREFIX.min(whole.len()));
            Box::pin(stream::once(async move { Ok(first) }).chain(stream::pending()))
        }
        ListingFault::Trickle => {
            let body = whole.slice(..whole.len().saturating_sub(1));
            let bytes = (0..body.len())
                .map(move |i| body.slice(i..=i))
                .chain(std::iter::repeat(Bytes::from_static(b" ")));
            Box::pin(stream::iter(bytes).then(|b| async move {
                tokio::time::sleep(TRICKLE_EVERY).await;
                Ok(b)
            }))
        }
    };
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

fn option_u64(options: &Map<String, Value>, key: &str) -> Option<u64> {
    options.get(key).and_then(Value::as_u64)
}

/// The `dribble` response: `render(plan, i)` gives stream event `i`; `whole` is the
/// non-streaming body.
pub async fn dribble<F>(
    counters: &Arc<Counters>,
    plan: Plan,
    options: &Map<String, Value>,
    stream_mode: bool,
    ctype: &'static str,
    whole: Vec<u8>,
    render: F,
) -> Response
where
    F: Fn(&Plan, usize) -> Option<Bytes> + Send + Sync + 'static,
{
    let log = Logged::start(counters, &plan.model.name, stream_mode);
    if let Some(ms) = option_u64(options, "head_ms") {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let delay = plan.delay;
    let pieces: Vec<Bytes> = if stream_mode {
        (0..).map_while(|i| render(&plan, i)).collect()
    } else {
        let n = plan.pieces.len().max(1);
        let size = whole.len().div_ceil(n).max(1);
        whole.chunks(size).map(Bytes::copy_from_slice).collect()
    };
    let paced = stream::iter(pieces.into_iter().enumerate()).then(move |(i, b)| async move {
        if i > 0 {
            tokio::time::sleep(delay).await;
        }
        Ok::<_, std::io::Error>(b)
    });
    let body = LoggedStream {
        inner: Box::pin(paced),
        log,
    };
    respond(200, ctype, axum::body::Body::from_stream(body))
}

/// The `mid-cut` response: stream `lines` (the first two whole, then half of the third), or
/// the non-streaming `whole` body, cut.
pub fn mid_cut(
    counters: &Arc<Counters>,
    options: &Map<String, Value>,
    ctype: &'static str,
    lines: Option<Vec<Bytes>>,
    whole: Vec<u8>,
) -> Response {
    let cut_ms = option_u64(options, "cut_ms").unwrap_or(50);
    let (sent, declared): (Vec<Bytes>, Option<usize>) = match lines {
        Some(lines) => {
            let mut sent: Vec<Bytes> = lines.iter().take(2).cloned().collect();
            if let Some(third) = lines.get(2) {
                sent.push(third.slice(..third.len() / 2));
            }
            (sent, None)
        }
        None => {
            let n = option_u64(options, "cut_bytes")
                .map_or(whole.len() / 2, |n| n as usize)
                .min(whole.len());
            let declare = options
                .get("declare_length")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let first = Bytes::copy_from_slice(&whole[..n]);
            (
                if n > 0 { vec![first] } else { Vec::new() },
                declare.then_some(whole.len()),
            )
        }
    };
    let cut = stream::once(async move {
        // Let what was written reach the socket before the connection drops.
        tokio::time::sleep(Duration::from_millis(cut_ms)).await;
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "stream cut",
        ))
    });
    let s: ByteStream = Box::pin(stream::iter(sent.into_iter().map(Ok)).chain(cut));
    let mut r = respond(
        200,
        ctype,
        crate::wire::Tracked::new(s, counters.clone()).body(),
    );
    if let Some(len) = declared {
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    r
}

/// The answer of a `dribble` or `mid-cut` model.
pub async fn reply(
    st: &Shared,
    plan: Plan,
    options: &Map<String, Value>,
    model: String,
    stream_mode: bool,
    is_chat: bool,
    raw: bool,
) -> Response {
    let whole = whole_body(&plan, &model, is_chat);
    let ctype = if stream_mode { NDJSON } else { JSON_UTF8 };
    let render = move |p: &Plan, i: usize| {
        if is_chat {
            crate::native::chat_event(&model, p, i)
        } else {
            crate::native::generate_event(&model, p, i, raw)
        }
    };
    if plan.model.base() == "mid-cut" {
        let lines = stream_mode.then(|| (0..).map_while(|i| render(&plan, i)).collect());
        return mid_cut(&st.counters, options, ctype, lines, whole);
    }
    dribble(
        &st.counters,
        plan,
        options,
        stream_mode,
        ctype,
        whole,
        render,
    )
    .await
}

/// The non-streaming answer: the whole content in one object.
fn whole_body(plan: &Plan, model: &str, is_chat: bool) -> Vec<u8> {
    let content = plan.content();
    let mut v = if is_chat {
        json!({"model": model, "created_at": now(),
               "message": {"role": "assistant", "content": content},
               "done": true, "done_reason": plan.done_reason,
               "eval_count": plan.eval_count()})
    } else {
        json!({"model": model, "created_at": now(), "response": content,
               "done": true, "done_reason": plan.done_reason,
               "eval_count": plan.eval_count()})
    };
    let logprobs = plan.all_logprobs();
    if !logprobs.is_empty() {
        v["logprobs"] = Value::Array(logprobs);
    }
    go_json(&v)
}
