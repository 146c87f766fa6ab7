//! The Anthropic Messages surface through its public API, as a route uses
//! it: translate the client's request, run (here: fake) the pipeline, and
//! render its Ollama-shaped output.
//!
//! With `AUGUR_ANTHROPIC_DUMP=<dir>` set, the rendered bodies are also
//! written there (`whole.json`, `stream.sse`, `error.sse`), to be read by
//! a real client's parser.

use crate::{error::ProxyError, pipeline::output::Output};

use super::super::{Meta, render, translate};
use http::HeaderMap;
use serde_json::{Value, json};

fn request(stream: bool) -> serde_json::Map<String, Value> {
    let v = json!({
        "model": "gemma3",
        "max_tokens": 256,
        "stream": stream,
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [{"name": "get_weather", "description": "Weather for a city",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"}, {"type": "text", "text": "And Rome?"}]}
        ]
    });
    v.as_object().cloned().unwrap()
}

async fn text(r: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn dump(name: &str, body: &str) {
    if let Ok(dir) = std::env::var("AUGUR_ANTHROPIC_DUMP") {
        std::fs::write(std::path::Path::new(&dir).join(name), body).unwrap();
    }
}

fn call(id: &str, city: &str) -> Value {
    json!({"id": id, "function": {"index": 0, "name": "get_weather", "arguments": {"city": city}}})
}

#[tokio::test]
async fn a_whole_tool_answer_round_trips() {
    let t = translate(&request(false)).unwrap();
    assert_eq!(t.body["stream"], false);
    assert_eq!(t.body["tool_choice"], "required");
    assert_eq!(t.body["parallel_tool_calls"], false);
    assert_eq!(t.body["messages"][3]["tool_name"], "get_weather");
    let answer = json!({
        "model": "gemma3", "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [call("call_ab12cd34", "Rome")]},
        "done": true, "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 12
    });
    let r = render(
        Meta::new(&t),
        Output::Full {
            value: answer,
            headers: HeaderMap::new(),
        },
        None,
    );
    let body = text(r).await;
    dump("whole.json", &body);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(
        v["content"],
        json!([{"type": "tool_use", "id": "call_ab12cd34", "name": "get_weather", "input": {"city": "Rome"}}])
    );
    assert_eq!(v["usage"], json!({"input_tokens": 40, "output_tokens": 12}));
}

#[tokio::test]
async fn a_streamed_answer_renders_every_event() {
    let t = translate(&request(true)).unwrap();
    assert_eq!(t.body["stream"], true);
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let r = render(
        Meta::new(&t),
        Output::Stream {
            rx,
            headers: HeaderMap::new(),
        },
        None,
    );
    let chunk =
        |message: Value, done: bool| json!({"model": "gemma3", "message": message, "done": done});
    for item in [
        chunk(
            json!({"role": "assistant", "content": "", "thinking": "Rome next."}),
            false,
        ),
        chunk(
            json!({"role": "assistant", "content": "Checking Rome."}),
            false,
        ),
        chunk(
            json!({"role": "assistant", "content": "", "tool_calls": [call("call_1", "Rome")]}),
            false,
        ),
        json!({"model": "gemma3", "message": {"role": "assistant", "content": ""}, "done": true,
               "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 12}),
    ] {
        tx.send(Ok(item)).await.unwrap();
    }
    let body = text(r).await;
    dump("stream.sse", &body);
    let names: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
}

#[tokio::test]
async fn a_failure_mid_stream_is_an_error_event() {
    let t = translate(&request(true)).unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let r = render(
        Meta::new(&t),
        Output::Stream {
            rx,
            headers: HeaderMap::new(),
        },
        None,
    );
    tx.send(Ok(json!({"model": "gemma3", "message": {"role": "assistant", "content": "Par"}, "done": false})))
        .await
        .unwrap();
    tx.send(Err(ProxyError::UpstreamUnavailable(
        "connection reset".into(),
    )))
    .await
    .unwrap();
    drop(tx);
    let body = text(r).await;
    dump("error.sse", &body);
    assert!(body.ends_with(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"upstream unavailable: connection reset\"}}\n\n"
    ));
}

#[test]
fn bad_requests_are_400s_with_ollamas_texts() {
    let mut r = request(false);
    r.remove("max_tokens");
    let err = translate(&r).unwrap_err();
    assert_eq!(err.status(), http::StatusCode::BAD_REQUEST);
    assert_eq!(
        err.to_string(),
        "max_tokens is required and must be positive"
    );
}
