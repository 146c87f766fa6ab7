//! Stage 6 for transformed requests: augur's own calls to the upstream.
//!
//! A transformed request is sent with the client's headers (so auth
//! forwarded to Ollama and tracing headers still arrive) but with a body
//! augur wrote. Answers are read line by line; a whole answer is only held
//! when a feature needs it, bounded by `stream_buffer_limit`.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::body::Body;
use bytes::Bytes;
use futures_util::Stream;
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body::Body as _;
use http_body_util::BodyExt;
use serde_json::Value;

use super::{
    probs::Probs,
    splitter::{LineSplitter, LineTooLong},
};
use crate::{
    client::ClientInfo, error::ProxyError, limits::Usage, record::Tap, state::AppState,
    telemetry::Timing, upstream::Target,
};

/// What an internal call needs from the client request.
#[derive(Clone)]
pub(crate) struct CallCtx {
    pub state: AppState,
    pub headers: HeaderMap,
    pub client: Option<ClientInfo>,
    pub timing: Option<Arc<Timing>>,
    /// Where the token counts of every answer are reported, for the
    /// request's token budgets (retries cost tokens too).
    pub usage: Option<Arc<Usage>>,
    /// Where calls go: the model's upstreams, the one its capabilities
    /// came from first.
    pub target: Target,
    /// The model every answer names (`model` of each answer and chunk):
    /// the client's, when a fallback model answers for it.
    pub answer_as: Option<Value>,
    /// What the answers' token probabilities are for: a streamed answer's
    /// are gathered (and taken out of its chunks unless the client asked).
    pub probs: Probs,
    /// The request's recording, when its model's policy records.
    pub tap: Option<Tap>,
}

/// Report the token counts of a whole answer or a done chunk.
fn report_counts(usage: Option<&Arc<Usage>>, answer: &Value) {
    let Some(usage) = usage else { return };
    let count = |k: &str| answer.get(k).and_then(Value::as_u64);
    if let (None, None) = (count("prompt_eval_count"), count("eval_count")) {
        return;
    }
    usage.report(crate::limits::usage::Counts {
        input: count("prompt_eval_count").unwrap_or(0),
        output: count("eval_count").unwrap_or(0),
        eval_ns: count("eval_duration"),
    });
}

impl CallCtx {
    /// The upstream the model's capabilities are looked up on.
    pub(crate) fn upstream(&self) -> usize {
        match &self.target {
            Target::Model {
                prefer: Some(i), ..
            } => *i,
            _ => 0,
        }
    }

    fn request(&self, path: &str, bytes: Bytes) -> Result<Request<Body>, ProxyError> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .body(Body::from(bytes))
            .map_err(|e| ProxyError::Internal(format!("build upstream request: {e}")))?;
        if let Some(tap) = &self.tap {
            req.extensions_mut().insert(tap.clone());
        }
        let headers = req.headers_mut();
        headers.extend(self.headers.clone());
        headers.remove(header::CONTENT_LENGTH);
        headers.remove(header::ACCEPT_ENCODING);
        headers.insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        Ok(req)
    }

    async fn send(&self, path: &str, bytes: Bytes) -> Result<http::Response<Body>, ProxyError> {
        let req = self.request(path, bytes.clone())?;
        self.state
            .fleet
            .call(
                req,
                &self.target,
                Some(bytes),
                self.client.clone(),
                self.timing.clone(),
            )
            .await
    }

    /// POST `body` to `path` and read the whole JSON answer (bounded).
    pub(crate) async fn json(&self, path: &str, body: &Value) -> Result<Value, ProxyError> {
        self.json_raw(path, serialize(body)?).await
    }

    /// [`CallCtx::json`] with the body's bytes as they are (the client's own).
    pub(crate) async fn json_raw(&self, path: &str, body: Bytes) -> Result<Value, ProxyError> {
        let response = self.send(path, body).await?;
        let status = response.status();
        let limit = self.state.config.stream_buffer_limit as usize;
        let bytes = http_body_util::Limited::new(response.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    ProxyError::UpstreamProtocol(format!(
                        "the upstream answer exceeds {limit} bytes"
                    ))
                } else {
                    // A cut answer is no answer, whatever arrived of it.
                    ended_early(&*e)
                }
            })?
            .to_bytes();
        if !status.is_success() {
            return Err(upstream_error(status, &bytes));
        }
        let mut value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ProxyError::UpstreamProtocol(format!("upstream answer is not JSON: {e}"))
        })?;
        rename(&mut value, self.answer_as.as_ref());
        if let Some(err) = value.get("error").and_then(Value::as_str) {
            return Err(ProxyError::upstream(
                StatusCode::INTERNAL_SERVER_ERROR,
                err.to_string(),
            ));
        }
        report_counts(self.usage.as_ref(), &value);
        Ok(value)
    }

    /// POST `body` to `path` and read the NDJSON answer line by line.
    pub(crate) async fn lines(&self, path: &str, body: &Value) -> Result<Lines, ProxyError> {
        self.lines_raw(path, serialize(body)?).await
    }

    /// [`CallCtx::lines`] with the body's bytes as they are (the client's own).
    pub(crate) async fn lines_raw(&self, path: &str, body: Bytes) -> Result<Lines, ProxyError> {
        let response = self.send(path, body).await?;
        let status = response.status();
        if !status.is_success() {
            let limit = 1024 * 1024;
            let bytes = http_body_util::Limited::new(response.into_body(), limit)
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            return Err(upstream_error(status, &bytes));
        }
        let mut lines = Lines::new(
            response.into_body(),
            self.state.config.stream_buffer_limit as usize,
        );
        lines.usage = self.usage.clone();
        lines.answer_as = self.answer_as.clone();
        lines.probs = self.probs;
        Ok(lines)
    }
}

fn serialize(body: &Value) -> Result<Bytes, ProxyError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ProxyError::Internal(format!("serialize upstream body: {e}")))
}

/// Name `model` in an answer that has a `model`.
fn rename(answer: &mut Value, model: Option<&Value>) {
    if let (Some(model), Some(slot)) = (model, answer.get_mut("model")) {
        *slot = model.clone();
    }
}

/// An upstream answer that failed before its end: cut (a 502), or silent
/// for the idle timeout (a 504).
fn ended_early(e: &(dyn std::error::Error + 'static)) -> ProxyError {
    match crate::upstream::stalled(e) {
        Some(idle) => ProxyError::UpstreamTimeout(idle.as_millis()),
        None => ProxyError::UpstreamCut(format!("the upstream answer ended early: {e}")),
    }
}

/// The upstream's error answer as a [`ProxyError::Upstream`] with its status.
pub(crate) fn upstream_error(status: StatusCode, body: &[u8]) -> ProxyError {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| match v.get("error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(o)) => o.get("message").and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    ProxyError::upstream(status, message)
}

/// Parsed NDJSON lines of an upstream stream. An `{"error": ...}` line
/// becomes an error item; a cut stream becomes an error item too, and ends
/// the lines.
pub(crate) struct Lines {
    body: Body,
    splitter: LineSplitter,
    done: bool,
    usage: Option<Arc<Usage>>,
    answer_as: Option<Value>,
    probs: Probs,
    /// The token probabilities of the chunks read so far, when scored.
    tokens: crate::confidence::Tokens,
}

impl Lines {
    fn new(body: Body, max_line: usize) -> Self {
        Self {
            body,
            splitter: LineSplitter::new(max_line),
            done: false,
            usage: None,
            answer_as: None,
            probs: Probs::default(),
            tokens: crate::confidence::Tokens::default(),
        }
    }

    fn parse(&mut self, line: Result<Bytes, LineTooLong>) -> Result<Value, ProxyError> {
        let mut value = parse_line(line)?;
        rename(&mut value, self.answer_as.as_ref());
        if value.get("done").and_then(Value::as_bool) == Some(true) {
            report_counts(self.usage.as_ref(), &value);
        }
        if self.probs.policy.is_some() {
            if let Some(lp) = value.get("logprobs") {
                self.tokens.extend(lp);
            }
            self.probs.strip(&mut value);
        }
        Ok(value)
    }

    /// The token probabilities of the chunks read so far.
    pub(crate) fn tokens(&self) -> &crate::confidence::Tokens {
        &self.tokens
    }
}

fn parse_line(line: Result<Bytes, LineTooLong>) -> Result<Value, ProxyError> {
    let text = line.map_err(|e| ProxyError::UpstreamProtocol(e.to_string()))?;
    let value: Value = serde_json::from_slice(&text)
        .map_err(|e| ProxyError::UpstreamProtocol(format!("invalid NDJSON line: {e}")))?;
    if let Some(err) = value.get("error").and_then(Value::as_str) {
        return Err(ProxyError::upstream(
            StatusCode::INTERNAL_SERVER_ERROR,
            err.to_string(),
        ));
    }
    Ok(value)
}

impl Stream for Lines {
    type Item = Result<Value, ProxyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(line) = this.splitter.next_line() {
                // A line over the limit ends the lines.
                this.done |= line.is_err();
                return Poll::Ready(Some(this.parse(line)));
            }
            if this.done {
                let last = this.splitter.finish();
                return Poll::Ready(last.map(|l| this.parse(l)));
            }
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.done = true,
                Poll::Ready(Some(Err(e))) => {
                    // What came before the failure is no answer: drop it.
                    this.done = true;
                    this.splitter = LineSplitter::new(0);
                    return Poll::Ready(Some(Err(ended_early(&e))));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        this.splitter.push(&data);
                    }
                }
            }
        }
    }
}
