//! How every surface streams: the pipeline's chunks are read off their
//! channel as they come, each is turned into the surface's frames (NDJSON
//! lines, SSE events) and handed to the server at once. An error ends the
//! stream in the surface's own shape. The body ends with the done chunk;
//! the rest of the channel is read apart, so the producer finishes its
//! work, and anything more is dropped. A stream that ends in an error
//! reports it to the request's [`Timing`]: its status said 200, its
//! error says how it really ended.
//!
//! What augur did to a streamed answer (repairs, validation, the tool
//! guard, a fallback model, confidence) is said in the done chunk's
//! `augur_*` fields; a surface whose stream has no done chunk carries
//! them on its closing event ([`augur_fields`]).

use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{error::ProxyError, pipeline::output::Item, telemetry::Timing};

/// A surface's stream writer.
pub(crate) trait Frames: Send + 'static {
    /// The frames for one chunk.
    fn chunk(&mut self, chunk: &Value) -> Vec<Bytes>;
    /// The frames that end a stream cut by `e`.
    fn error(&mut self, e: &ProxyError) -> Vec<Bytes>;
}

/// The `augur_*` fields of a done chunk, in order: what a surface's
/// closing event carries beside its own fields.
pub(crate) fn augur_fields(chunk: &Value) -> impl Iterator<Item = (&String, &Value)> {
    chunk
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("augur_"))
}

/// The response body for a chunk channel, written by `frames`; an error
/// that ends it is reported to `timing`.
pub(crate) fn body<F: Frames>(
    rx: mpsc::Receiver<Item>,
    frames: F,
    timing: Option<Arc<Timing>>,
) -> Body {
    let events = futures_util::stream::unfold(Some((rx, frames)), move |st| {
        let timing = timing.clone();
        async move {
            let (mut rx, mut frames) = st?;
            match rx.recv().await {
                Some(Ok(chunk)) if chunk.get("done").and_then(Value::as_bool) == Some(true) => {
                    let out = frames.chunk(&chunk);
                    drain(rx);
                    Some((out, None))
                }
                Some(Ok(chunk)) => {
                    let out = frames.chunk(&chunk);
                    Some((out, Some((rx, frames))))
                }
                Some(Err(e)) => {
                    if let Some(t) = &timing {
                        t.report_error(&e);
                    }
                    Some((frames.error(&e), None))
                }
                None => None,
            }
        }
    });
    let frames = events
        .flat_map(futures_util::stream::iter)
        .map(Ok::<Bytes, std::io::Error>);
    Body::from_stream(frames.boxed())
}

/// Read the rest of a channel whose answer is complete, so that its
/// producer finishes its work; what it sends is dropped.
fn drain(mut rx: mpsc::Receiver<Item>) {
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
}
