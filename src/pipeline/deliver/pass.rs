//! A validated answer streamed as the upstream produces it (`stream:
//! pass`, and JSON mode by default): the whole is validated at the end and
//! the verdict reported in the done chunk. Nothing is retried: it has
//! been sent; a fallback model answers only when the upstreams fail
//! before the first byte.

use crate::pipeline::job::{Marks, Verdict};
use futures_util::StreamExt;
use serde_json::Value;

use crate::error::ProxyError;

use super::super::{
    attempt::interpret::interpret,
    checks, confidence,
    job::{Expect, Job, answer_text},
    output::{self, Output, Report},
};

/// Stream as the upstream produces; validate the whole at the end and
/// report it in the done chunk (`augur_validation`, `augur_violations`).
pub(crate) async fn run(job: Job) -> Result<Output, ProxyError> {
    let (job, mut lines) = job.open_stream(Job::open_lines).await?;
    let headers = Report {
        fallback: job.answered.clone(),
        ..Report::default()
    }
    .headers();
    let limit = job.ctx.state.config.stream_buffer_limit as usize;
    Ok(output::stream(headers, |tx| async move {
        let mut text = String::new();
        let mut overflow = false;
        // The model called tools: a format governs its answer, not its calls.
        let mut called = false;
        while let Some(item) = lines.next().await {
            let mut chunk = match item {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
            let piece = answer_text(job.route, &chunk);
            called |= chunk
                .pointer("/message/tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            if text.len() + piece.len() <= limit {
                text.push_str(&piece);
            } else {
                overflow = true;
            }
            // The client has gone: nothing to check for anyone.
            if tx.is_closed() {
                return;
            }
            let calls_only = called && text.trim().is_empty();
            if done && !calls_only && !matches!(job.expect, Expect::Text) {
                let verdict = if overflow {
                    Verdict::Unchecked
                } else {
                    let interp = interpret(&text, &job.expect, &job.validators, false);
                    if interp.violations.is_empty() && interp.unchecked {
                        Verdict::Unchecked
                    } else if interp.violations.is_empty() {
                        Verdict::Valid
                    } else {
                        metrics::counter!("augur_validation_failures_total").increment(1);
                        if let Some(mut marks) = Marks::of(&mut chunk) {
                            marks.violations(checks::describe(&interp.violations));
                        }
                        Verdict::Invalid
                    }
                };
                if let Some(mut marks) = Marks::of(&mut chunk) {
                    marks.validation(verdict);
                }
            }
            if done {
                let tokens = lines.tokens();
                let scorer = |t: &_| confidence::score_stream(&job.expect, t, &[]);
                confidence::end_stream(&job, tokens, scorer, &mut chunk);
            }
            if !output::send(&tx, Ok(chunk)).await || done {
                return;
            }
        }
    }))
}
