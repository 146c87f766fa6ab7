//! Stage 9: what a transformed request answers: Ollama-shaped values, one
//! whole response or a channel of chunks, with the headers that report
//! what augur did. Each surface renders them in its own shape (Ollama's
//! NDJSON, SSE events, JSON), one line per chunk,
//! flushed as it comes.

use std::future::Future;

use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::ProxyError;

/// A chunk or the error that ends a stream.
pub(crate) type Item = Result<Value, ProxyError>;

/// What a transformed request produced.
pub enum Output {
    /// One whole Ollama response object.
    Full { value: Value, headers: HeaderMap },
    /// Ollama chunks as they are produced; the last one has `done: true`.
    Stream {
        rx: mpsc::Receiver<Item>,
        headers: HeaderMap,
    },
}

/// Capacity of a chunk channel: small, so a slow client slows the producer.
const CHANNEL: usize = 32;

/// Headers that report what augur did: `X-Augur-Repaired`,
/// `X-Augur-Attempts`, `X-Augur-Validation` (`invalid`, or `unchecked` when
/// some of the answer could not be checked against the schema),
/// `X-Augur-Emulated`, `X-Augur-Model` / `X-Augur-Fallback` when a
/// fallback model answered, `X-Augur-Fallback: failed` when the
/// fallback models failed and the best answer before them stands, and
/// `X-Augur-Confidence` (with `X-Augur-Confidence-Calls`) when the policy
/// asks how sure the model was.
#[derive(Debug, Default, Clone)]
pub(crate) struct Report {
    pub repaired: Vec<String>,
    pub attempts: u32,
    pub invalid: bool,
    /// Some of the answer could not be checked against the schema.
    pub unchecked: bool,
    pub emulated: Option<&'static str>,
    /// A fallback model answered.
    pub fallback: Option<super::job::Answered>,
    /// The fallback models failed: the best answer before them stands.
    pub fallback_failed: bool,
    /// How sure the model was, when the policy asks (`Some(None)`: the
    /// upstream returned no probabilities).
    pub(crate) confidence: Option<Option<crate::confidence::Confidence>>,
    /// The policy's threshold, when the answer is below it.
    pub(crate) below: Option<f64>,
}

impl Report {
    /// The `X-Augur-*` headers for this report.
    pub(crate) fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if !self.repaired.is_empty() {
            let mut seen: Vec<&str> = Vec::new();
            for r in &self.repaired {
                if !seen.contains(&r.as_str()) {
                    seen.push(r);
                }
            }
            h.insert(
                "x-augur-repaired",
                crate::wire::header_text(&seen.join(", ")),
            );
        }
        if self.attempts > 1 {
            h.insert("x-augur-attempts", HeaderValue::from(self.attempts));
        }
        if self.invalid {
            h.insert("x-augur-validation", HeaderValue::from_static("invalid"));
        } else if self.unchecked {
            h.insert("x-augur-validation", HeaderValue::from_static("unchecked"));
        }
        if let Some(what) = self.emulated {
            h.insert("x-augur-emulated", HeaderValue::from_static(what));
        }
        if let Some(f) = &self.fallback {
            // Never dropped: a name a header cannot hold comes escaped.
            h.insert("x-augur-model", crate::wire::header_text(&f.model));
            h.insert(
                "x-augur-fallback",
                HeaderValue::from_static(f.reason.as_str()),
            );
        }
        if self.fallback_failed {
            h.insert(
                "x-augur-fallback",
                HeaderValue::from_static(super::job::chain::FAILED),
            );
        }
        if let Some(c) = &self.confidence {
            h.insert("x-augur-confidence", super::confidence::header(c.as_ref()));
            if let Some(calls) = c.as_ref().and_then(super::confidence::calls_header) {
                h.insert("x-augur-confidence-calls", calls);
            }
        }
        if let Some(below) = self.below
            && let Ok(v) = HeaderValue::from_str(&below.to_string())
        {
            h.insert("x-augur-confidence-below", v);
        }
        h
    }
}

/// Send `item` unless the client has gone; false = stop producing.
pub(crate) async fn send(tx: &mpsc::Sender<Item>, item: Item) -> bool {
    tx.send(item).await.is_ok()
}

/// A stream answer with `headers`, whose chunks `producer` sends (see
/// [`spawn_producer`]).
pub(crate) fn stream<P, F>(headers: HeaderMap, producer: P) -> Output
where
    P: FnOnce(mpsc::Sender<Item>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(CHANNEL);
    spawn_producer(tx, producer);
    Output::Stream { rx, headers }
}

/// A [`stream`] whose producer may fail: its error is the last item.
pub(crate) fn stream_fallible<P, F>(headers: HeaderMap, producer: P) -> Output
where
    P: FnOnce(mpsc::Sender<Item>) -> F,
    F: Future<Output = Result<(), ProxyError>> + Send + 'static,
{
    stream(headers, |tx| {
        let produced = producer(tx.clone());
        async move {
            if let Err(e) = produced.await {
                let _ = tx.send(Err(e)).await;
            }
        }
    })
}

/// Run `producer`, given `tx` to feed, on a task of its own until it
/// ends or the channel's receiver is dropped. The receiver lives in the
/// response body, which the server drops when the client goes away
/// (connection closed, HTTP/2 stream reset): the producer is then dropped
/// where it stands, whatever it awaits (an upstream stream, a whole
/// answer, a retry), and with it its upstream call, whose connection is
/// closed, which stops the generation. Nothing is asked of the upstream
/// for a client that has left.
fn spawn_producer<P, F>(tx: mpsc::Sender<Item>, producer: P)
where
    P: FnOnce(mpsc::Sender<Item>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let watch = tx.clone();
    let producer = producer(tx);
    tokio::spawn(async move {
        tokio::select! {
            biased;
            () = watch.closed() => {
                tracing::debug!("the client has gone; upstream work cancelled");
            }
            () = producer => {}
        }
    });
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
