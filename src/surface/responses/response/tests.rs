//! Whole answers as `response` objects, byte for byte as Ollama's
//! `ToResponse` writes them (text, tool calls, thinking, a length stop,
//! echoed request fields), and [`render`]'s headers and bodies.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, HeaderValue};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::*;
use crate::{
    error::ProxyError,
    pipeline::output::Output,
    surface::responses::{echo::Echo, render},
};

pub(crate) fn meta(echo: Echo) -> Meta {
    Meta {
        response_id: "resp_123".into(),
        item_id: "msg_456".into(),
        model: "gpt-oss:20b".into(),
        echo: Arc::new(echo),
    }
}

const NOW: i64 = 1_700_000_000;

fn answer(message: Value, done_reason: &str) -> Value {
    json!({
        "model": "gpt-oss:20b", "created_at": "2025-10-26T17:15:24.0977Z",
        "message": message, "done": true, "done_reason": done_reason,
        "prompt_eval_count": 3, "eval_count": 4
    })
}

/// Everything after `"output":[…],` of a default request's object.
const DEFAULT_TAIL: &str = r#""error":null,"tools":[],"tool_choice":"auto","truncation":"disabled","parallel_tool_calls":true,"text":{"format":{"type":"text"}},"top_p":1,"presence_penalty":0,"frequency_penalty":0,"top_logprobs":0,"temperature":1,"reasoning":null,"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}},"max_output_tokens":null,"max_tool_calls":null,"store":false,"background":false,"service_tier":"default","metadata":{},"safety_identifier":null,"prompt_cache_key":null}"#;

const DEFAULT_HEAD: &str = r#"{"id":"resp_123","object":"response","created_at":1761498924,"completed_at":1700000000,"status":"completed","incomplete_details":null,"model":"gpt-oss:20b","previous_response_id":null,"instructions":null,"#;

#[test]
fn a_text_answer_is_one_message_item() {
    let v = answer(json!({"role": "assistant", "content": "Hello <b>"}), "stop");
    let got = crate::wire::to_go_json(&whole(&meta(Echo::default()), &v, NOW));
    let want = format!(
        r#"{DEFAULT_HEAD}"output":[{{"id":"msg_456","type":"message","status":"completed","role":"assistant","content":[{{"type":"output_text","text":"Hello \u003cb\u003e","annotations":[],"logprobs":[]}}]}}],{DEFAULT_TAIL}"#
    );
    assert_eq!(got, want);
}

#[test]
fn tool_calls_replace_the_message_and_follow_the_reasoning() {
    let v = answer(
        json!({
            "role": "assistant", "content": "ignored", "thinking": "Let me look.",
            "tool_calls": [
                {"id": "call_a", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris", "q": "a<b"}}},
                {"id": "call_b", "function": {"index": 1, "name": "get_time", "arguments": {}}}
            ]
        }),
        "stop",
    );
    let got = crate::wire::to_go_json(&whole(&meta(Echo::default()), &v, NOW));
    let want = format!(
        r#"{DEFAULT_HEAD}"output":[{{"id":"rs_resp_123","type":"reasoning","summary":[{{"type":"summary_text","text":"Let me look."}}],"encrypted_content":"Let me look."}},{{"id":"fc_resp_123_0","type":"function_call","status":"completed","call_id":"call_a","name":"get_weather","arguments":"{{\"city\":\"Paris\",\"q\":\"a\\u003cb\"}}"}},{{"id":"fc_resp_123_1","type":"function_call","status":"completed","call_id":"call_b","name":"get_time","arguments":"{{}}"}}],{DEFAULT_TAIL}"#
    );
    assert_eq!(got, want);
}

#[test]
fn thinking_comes_first_as_a_reasoning_item() {
    let v = answer(
        json!({"role": "assistant", "thinking": "Analyzing the question...", "content": "The answer is 42"}),
        "stop",
    );
    let r = whole(&meta(Echo::default()), &v, NOW);
    let output = r["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(output[0]["summary"][0]["text"], "Analyzing the question...");
    assert_eq!(output[0]["encrypted_content"], "Analyzing the question...");
    assert_eq!(output[1]["content"][0]["text"], "The answer is 42");
}

#[test]
fn a_length_stop_is_still_completed_as_ollama_reports_it() {
    let v = answer(json!({"role": "assistant", "content": "cut"}), "length");
    let r = whole(&meta(Echo::default()), &v, NOW);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["incomplete_details"], Value::Null);
    assert_eq!(r["output"][0]["content"][0]["text"], "cut");
}

#[test]
fn an_answer_without_a_timestamp_or_counts_still_has_both() {
    let r = whole(
        &meta(Echo::default()),
        &json!({"message": {"role": "assistant", "content": ""}}),
        NOW,
    );
    assert_eq!(r["created_at"], NOW);
    assert_eq!(r["usage"]["total_tokens"], 0);
    assert_eq!(r["output"][0]["content"][0]["text"], "");
}

fn echoing() -> Echo {
    let t = crate::surface::responses::translate(
        json!({
            "model": "m", "input": "x", "instructions": "Be brief.",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {"b": {}, "a": {}}}},
                      {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "g", "description": "G"}]}],
            "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": false,
            "text": {"format": {"type": "json_schema", "name": "out", "strict": true, "schema": {"type": "object", "required": [], "properties": {}}}},
            "reasoning": {"effort": "high"}, "temperature": 0.2, "top_p": 0.9,
            "max_output_tokens": 64, "truncation": "auto", "background": false
        })
        .as_object()
        .unwrap(),
    )
    .unwrap();
    (*t.echo).clone()
}

#[test]
fn whole_objects_echo_the_request_in_struct_order() {
    let r = whole(
        &meta(echoing()),
        &answer(json!({"content": "{}"}), "stop"),
        NOW,
    );
    let pick = |k: &str| crate::wire::to_go_json(&r[k]);
    assert_eq!(pick("instructions"), r#""Be brief.""#);
    assert_eq!(
        pick("tools"),
        r#"[{"type":"function","name":"f","description":null,"strict":null,"parameters":{"properties":{"a":{},"b":{}},"type":"object"}},{"type":"namespace","name":"ns","description":null,"strict":null,"parameters":null,"tools":[{"type":"function","name":"g","description":"G","strict":null,"parameters":null}]}]"#
    );
    assert_eq!(pick("tool_choice"), r#"{"type":"function","name":"f"}"#);
    assert_eq!(pick("parallel_tool_calls"), "false");
    assert_eq!(
        pick("text"),
        r#"{"format":{"type":"json_schema","name":"out","schema":{"type":"object","required":[],"properties":{}},"strict":true}}"#
    );
    assert_eq!(pick("reasoning"), r#"{"effort":"high"}"#);
    assert_eq!(
        (pick("temperature"), pick("top_p")),
        ("0.2".into(), "0.9".into())
    );
    assert_eq!(pick("max_output_tokens"), "64");
    assert_eq!(pick("truncation"), r#""auto""#);
}

#[test]
fn streamed_objects_echo_the_request_as_sorted_maps() {
    let e = echoing();
    let r = e.streamed(State {
        id: "resp_1",
        model: "m",
        status: "in_progress",
        created_at: 5,
        completed_at: None,
        output: Vec::new(),
        usage: None,
    });
    let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let pick = |k: &str| crate::wire::to_go_json(&r[k]);
    assert_eq!(
        pick("tools"),
        r#"[{"description":null,"name":"f","parameters":{"properties":{"a":{},"b":{}},"type":"object"},"strict":null,"type":"function"},{"description":null,"name":"ns","parameters":null,"strict":null,"type":"namespace"}]"#
    );
    assert_eq!(
        pick("text"),
        r#"{"format":{"name":"out","schema":{"type":"object","required":[],"properties":{}},"strict":true,"type":"json_schema"}}"#
    );
    assert_eq!(pick("reasoning"), r#"{"effort":"high","summary":null}"#);
    assert_eq!(pick("usage"), "null");
    assert_eq!(pick("completed_at"), "null");
}

async fn body_of(r: Response) -> String {
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn whole_answers_are_json_with_the_report_headers() {
    let mut headers = HeaderMap::new();
    headers.insert("x-augur-emulated", HeaderValue::from_static("tools"));
    let value = answer(json!({"role": "assistant", "content": "hi"}), "stop");
    let r = render(meta(Echo::default()), Output::Full { value, headers }, None);
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    let text = body_of(r).await;
    assert!(text.ends_with("}\n"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["output"][0]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn streams_are_event_streams_that_end_after_an_error() {
    let (tx, rx) = mpsc::channel(8);
    tx.send(Ok(
        json!({"message": {"role": "assistant", "content": "Hel"}, "done": false}),
    ))
    .await
    .unwrap();
    tx.send(Err(ProxyError::UpstreamUnavailable("gone".into())))
        .await
        .unwrap();
    tx.send(Ok(json!({"message": {"content": "never"}, "done": true})))
        .await
        .unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("x-augur-attempts", HeaderValue::from_static("2"));
    let r = render(meta(Echo::default()), Output::Stream { rx, headers }, None);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(r.headers()["cache-control"], "no-cache");
    assert_eq!(r.headers()["x-augur-attempts"], "2");
    let text = body_of(r).await;
    let kinds: Vec<&str> = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("event: "))
        .map(|e| e.split('\n').next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.failed",
        ]
    );
    assert!(!text.contains("never"));
}

#[tokio::test]
async fn streams_read_the_channel_to_its_end_after_the_done_chunk() {
    // Room for one chunk: each send waits until the one before was read.
    let (tx, rx) = mpsc::channel(1);
    let r = render(
        meta(Echo::default()),
        Output::Stream {
            rx,
            headers: HeaderMap::new(),
        },
        None,
    );
    let producer = tokio::spawn(async move {
        for chunk in [
            json!({"message": {"content": "ok"}, "done": false}),
            json!({"message": {"content": ""}, "done": true, "done_reason": "stop"}),
            json!({"message": {"content": "extra"}, "done": false}),
        ] {
            // Fails if the body stopped reading at the done chunk.
            tx.send(Ok(chunk)).await.unwrap();
        }
    });
    let text = body_of(r).await;
    producer.await.unwrap();
    assert!(text.ends_with("\n\n"));
    assert_eq!(text.matches("event: response.completed\n").count(), 1);
    assert!(!text.contains("extra"));
}
