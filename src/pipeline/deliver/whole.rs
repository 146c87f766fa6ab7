//! A streamed answer that goes out whole after all: nothing of it was
//! sent when it failed, or the model was unsure of a call before it went
//! out. The whole-answer path (repairs, retries, fallback models) answers,
//! and its chunks are sent as the route streams them.

use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::ProxyError;

use super::super::{
    attempt::{doubt, fallback::note_in_done, screen_calls},
    call::Lines,
    chunk::{chunks_of, is_thinking_only},
    confidence,
    job::{Job, Seed},
    output::{self, Item, Report},
    plan::Route,
};

impl Job {
    /// Nothing of the answer was sent yet: answer through the whole-answer
    /// path (repair, retries, fallback models) and send its chunks as
    /// `route` streams them, leaving out its thinking when thinking went
    /// out already. A fallback model that answered after the headers went
    /// out is named in the done chunk.
    pub(crate) async fn stream_complete(
        &self,
        route: Route,
        tx: &mpsc::Sender<Item>,
        sent_thinking: bool,
        seed: Option<Seed>,
    ) -> Result<(), ProxyError> {
        if tx.is_closed() {
            // The client has gone: nothing is asked again.
            return Ok(());
        }
        let whole = self.complete(seed).await?;
        self.send_whole(route, tx, sent_thinking, whole).await
    }

    /// Send a whole answer's chunks as `route` streams them (see
    /// [`Job::stream_complete`]).
    pub(super) async fn send_whole(
        &self,
        route: Route,
        tx: &mpsc::Sender<Item>,
        sent_thinking: bool,
        (value, report): (Value, Report),
    ) -> Result<(), ProxyError> {
        let mut chunks = chunks_of(route, &value);
        if let Some(done) = chunks.last_mut() {
            note_in_done(self, &report, done);
        }
        for chunk in chunks {
            if sent_thinking && is_thinking_only(&chunk) {
                continue;
            }
            if !output::send(tx, Ok(chunk)).await {
                break;
            }
        }
        Ok(())
    }

    /// A streamed answer (`text` so far) failed before anything of it was
    /// sent: the whole-answer path answers (see [`Job::stream_complete`]),
    /// with its retries. With none allowed (a fallback model would
    /// answer), the streamed answer, read to its end (`last`: its done
    /// chunk if it came), is this model's one attempt before the
    /// fallback models.
    pub(crate) async fn stream_whole(
        &self,
        tx: &mpsc::Sender<Item>,
        sent_thinking: bool,
        text: String,
        lines: &mut Lines,
        last: Option<Value>,
    ) -> Result<(), ProxyError> {
        if self.validate.max_retries > 0 || tx.is_closed() {
            return self
                .stream_complete(self.route, tx, sent_thinking, None)
                .await;
        }
        let completed = self.read_to_end(text, lines, last).await?;
        let outcome = screen_calls::after_complete(self, completed).await;
        let whole = self.conclude(outcome).await?;
        self.send_whole(self.route, tx, sent_thinking, whole).await
    }

    /// A streamed answer the model was unsure of (a call below the
    /// threshold) before anything of it was sent: read to its end and
    /// scored, it is this model's attempt, asked again
    /// (`on_low_confidence: retry`) or passed to the fallback models as
    /// the policy says, and the answer goes out whole.
    pub(crate) async fn stream_unsure(
        &self,
        tx: &mpsc::Sender<Item>,
        sent_thinking: bool,
        (text, lines, last): (String, &mut Lines, Option<Value>),
    ) -> Result<(), ProxyError> {
        let completed = self.read_to_end(text, lines, last).await?;
        let mut completed = self.scored(completed);
        if completed.confidence.is_none() {
            // The stream's own tokens, when the done chunk carried none.
            let tokens = lines.tokens();
            let calls = &completed.interp.calls;
            completed.confidence = confidence::score_stream(&self.expect, tokens, calls);
        }
        let outcome = doubt::after_scored(self, completed).await;
        let whole = self.conclude(outcome).await?;
        self.send_whole(self.route, tx, sent_thinking, whole).await
    }
}
