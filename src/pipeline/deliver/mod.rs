//! Stage 9: a job's answer delivered as the client asked: whole, held and
//! sent as chunks, or streamed ([`pass`]: as it comes, validated at the
//! end; [`think`]: emulated thinking as it comes; [`tools`]: tool calls
//! extracted as they complete).

pub(crate) mod pass;
pub(crate) mod think;
pub(crate) mod tools;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::ProxyError;

use super::{
    attempt::fallback::note_in_done,
    chunk::{chunks_of, is_thinking_only},
    job::{Delivery, Job, Seed},
    output::{self, Item, Output, Report},
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
}

/// Run `job` and produce its output.
pub(crate) async fn run(job: Job, delivery: Delivery) -> Result<Output, ProxyError> {
    match delivery {
        Delivery::Whole => {
            let (value, report) = job.complete(None).await?;
            Ok(Output::Full {
                value,
                headers: report.headers(),
            })
        }
        Delivery::Buffered => {
            let (value, report) = job.complete(None).await?;
            let route = job.route;
            Ok(output::stream(report.headers(), |tx| async move {
                for chunk in chunks_of(route, &value) {
                    if !output::send(&tx, Ok(chunk)).await {
                        return;
                    }
                }
            }))
        }
        Delivery::Pass => pass::run(job).await,
        Delivery::Tools => tools::run(job).await,
        Delivery::Think => think::run(job).await,
    }
}
