//! Streamed as it comes (`validate.stream: pass`, the default for
//! `"json"`): chunks go to the client as the upstream produces them, and
//! the whole answer is validated at the end and reported in the done chunk
//! (`augur_validation`, `augur_violations`). Nothing is retried: it has
//! been sent.

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::ProxyError;

use super::{
    attempts::{self, Expect},
    call::Lines,
    checks,
    flows::Job,
    output::{self, CHANNEL, Item, Output, Report},
};

/// Stream as the upstream produces; validate the whole at the end and
/// report it in the done chunk (`augur_validation`, `augur_violations`).
pub async fn run(job: Job) -> Result<Output, ProxyError> {
    let (job, mut lines) = job.open_stream(open_stream).await?;
    let headers = Report {
        fallback: job.answered.clone(),
        ..Report::default()
    }
    .headers();
    let (tx, rx) = mpsc::channel::<Item>(CHANNEL);
    let limit = job.ctx.state.config.stream_buffer_limit as usize;
    output::spawn_producer(tx, |tx| async move {
        let mut text = String::new();
        let mut overflow = false;
        while let Some(item) = lines.next().await {
            let mut chunk = match item {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
            let piece = attempts::answer_text(job.route, &chunk);
            if text.len() + piece.len() <= limit {
                text.push_str(&piece);
            } else {
                overflow = true;
            }
            // The client has gone: nothing to check for anyone.
            if tx.is_closed() {
                return;
            }
            if done && !matches!(job.expect, Expect::Text) {
                let verdict = if overflow {
                    json!("unchecked")
                } else {
                    let interp = attempts::interpret(&text, &job.expect, &job.validators, false);
                    if interp.violations.is_empty() && interp.unchecked {
                        json!("unchecked")
                    } else if interp.violations.is_empty() {
                        json!("valid")
                    } else {
                        metrics::counter!("augur_validation_failures_total").increment(1);
                        if let Value::Object(f) = &mut chunk {
                            f.insert(
                                "augur_violations".into(),
                                json!(checks::describe(&interp.violations)),
                            );
                        }
                        json!("invalid")
                    }
                };
                if let Value::Object(f) = &mut chunk {
                    f.insert("augur_validation".into(), verdict);
                }
            }
            if !output::send(&tx, Ok(chunk)).await || done {
                return;
            }
        }
    });
    Ok(Output::Stream { rx, headers })
}

/// Open `job`'s stream. A schema the upstream rejects is known before any
/// byte is streamed: it is degraded and sent again.
pub(super) async fn open_stream(job: &Job) -> Result<Lines, ProxyError> {
    let mut body = job.body.clone();
    body.insert("stream".into(), Value::Bool(true));
    let mut degrades = 0;
    loop {
        match job
            .ctx
            .lines(job.route.path(), &Value::Object(body.clone()))
            .await
        {
            Ok(lines) => return Ok(lines),
            Err(e) if attempts::degrade_after(&e, &job.validate, &mut body, &mut degrades) => {}
            Err(e) => return Err(e),
        }
    }
}
