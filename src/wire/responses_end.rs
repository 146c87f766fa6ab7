//! The events that end an OpenAI Responses stream that failed part-way,
//! the same whether augur rendered the stream or passed the upstream's own
//! events through: `response.failed` for a response already opened, else
//! an `error` event.

use bytes::Bytes;
use serde_json::{Value, json};

use super::go::sorted;

/// The `error.code` of a failed response for an HTTP `status`.
fn code(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        429 => "rate_limit_exceeded",
        _ => "api_error",
    }
}

/// One SSE event: `event: <kind>` and its data with `type` and
/// `sequence_number`, keys sorted as Go writes a map.
fn event(kind: &str, sequence: u64, mut pairs: Vec<(&str, Value)>) -> Bytes {
    pairs.push(("type", json!(kind)));
    pairs.push(("sequence_number", json!(sequence)));
    let data = super::go::to_go_json(&sorted(pairs));
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// `response.failed` for the response `id` of `model`, event number
/// `sequence`, failed with `status` and `message`.
pub(crate) fn failed_event(
    id: &str,
    model: &str,
    sequence: u64,
    status: u16,
    message: &str,
) -> Bytes {
    let response = sorted(vec![
        ("id", json!(id)),
        ("object", json!("response")),
        ("status", json!("failed")),
        ("model", json!(model)),
        ("output", json!([])),
        (
            "error",
            sorted(vec![
                ("code", json!(code(status))),
                ("message", json!(message)),
            ]),
        ),
        (
            "usage",
            sorted(vec![
                ("input_tokens", json!(0)),
                ("output_tokens", json!(0)),
                ("total_tokens", json!(0)),
            ]),
        ),
    ]);
    event("response.failed", sequence, vec![("response", response)])
}

/// The Responses `error` event, for a stream that failed before its
/// response was opened: event number `sequence`, failed with `status`
/// and `message`.
pub(crate) fn error_event(sequence: u64, status: u16, message: &str) -> Bytes {
    event(
        "error",
        sequence,
        vec![
            ("code", json!(code(status))),
            ("message", json!(message)),
            ("param", Value::Null),
        ],
    )
}

#[cfg(test)]
#[path = "responses_end_tests.rs"]
mod tests;
