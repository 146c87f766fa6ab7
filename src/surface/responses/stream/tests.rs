//! Streamed answers as SSE events, after Ollama's
//! `ResponsesStreamConverter` tests: the event sequence of text, tool
//! calls and thinking, sequence numbers, each event's JSON, the final
//! output, a length stop, and an error part-way.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::{error::ProxyError, surface::responses::echo::Echo};

fn clock() -> i64 {
    1_700_000_000
}

fn converter() -> Converter {
    let meta = Meta {
        response_id: "resp_123".into(),
        item_id: "msg_456".into(),
        model: "gpt-oss:20b".into(),
        echo: Arc::new(Echo::default()),
    };
    Converter::new(meta, clock)
}

/// `(event, data)` of each SSE event, checking the framing.
fn events(frames: &[Bytes]) -> Vec<(String, Value)> {
    frames
        .iter()
        .map(|f| {
            let text = std::str::from_utf8(f).unwrap();
            let rest = text.strip_prefix("event: ").unwrap();
            let (kind, rest) = rest.split_once("\ndata: ").unwrap();
            let data = rest.strip_suffix("\n\n").unwrap();
            assert!(!data.contains('\n'));
            let v: Value = serde_json::from_str(data).unwrap();
            assert_eq!(v["type"], kind);
            (kind.to_owned(), v)
        })
        .collect()
}

fn kinds(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(k, _)| k.as_str()).collect()
}

fn chunk(message: Value) -> Value {
    json!({"model": "gpt-oss:20b", "created_at": "2025-10-26T17:15:24Z", "message": message, "done": false})
}

fn done(done_reason: &str) -> Value {
    json!({"model": "gpt-oss:20b", "message": {"role": "assistant", "content": ""}, "done": true,
           "done_reason": done_reason, "prompt_eval_count": 10, "eval_count": 5})
}

#[test]
fn text_streams_as_one_message_item() {
    let mut c = converter();
    let first = events(&c.process(&chunk(json!({"role": "assistant", "content": "Hello"}))));
    assert_eq!(
        kinds(&first),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
        ]
    );
    let second = events(&c.process(&chunk(json!({"role": "assistant", "content": " World"}))));
    assert_eq!(kinds(&second), ["response.output_text.delta"]);
    assert!(!c.is_done());
    let last = events(&c.process(&done("stop")));
    assert!(c.is_done());
    assert_eq!(
        kinds(&last),
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let all: Vec<_> = first.iter().chain(&second).chain(&last).collect();
    for (i, (_, v)) in all.iter().enumerate() {
        assert_eq!(v["sequence_number"], i, "{v}");
    }
    assert_eq!(last[0].1["text"], "Hello World");
    assert_eq!(last[2].1["item"]["content"][0]["text"], "Hello World");
    let response = &last[3].1["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["completed_at"], clock());
    assert_eq!(response["output"].as_array().unwrap().len(), 1);
    assert_eq!(response["output"][0]["id"], "msg_456");
    assert_eq!(
        response["usage"],
        json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
               "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})
    );
    let created = &first[0].1["response"];
    assert_eq!(created["output"], json!([]));
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["usage"], Value::Null);
    assert_eq!(created["completed_at"], Value::Null);
}

#[test]
fn each_event_is_written_as_go_writes_a_map() {
    let mut c = converter();
    let frames = c.process(&chunk(json!({"content": "a<b"})));
    assert_eq!(
        std::str::from_utf8(&frames[2]).unwrap(),
        "event: response.output_item.added\ndata: {\"item\":{\"content\":[],\"id\":\"msg_456\",\"role\":\"assistant\",\"status\":\"in_progress\",\"type\":\"message\"},\"output_index\":0,\"sequence_number\":2,\"type\":\"response.output_item.added\"}\n\n"
    );
    assert_eq!(
        std::str::from_utf8(&frames[3]).unwrap(),
        "event: response.content_part.added\ndata: {\"content_index\":0,\"item_id\":\"msg_456\",\"output_index\":0,\"part\":{\"annotations\":[],\"logprobs\":[],\"text\":\"\",\"type\":\"output_text\"},\"sequence_number\":3,\"type\":\"response.content_part.added\"}\n\n"
    );
    assert_eq!(
        std::str::from_utf8(&frames[4]).unwrap(),
        "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":\"a\\u003cb\",\"item_id\":\"msg_456\",\"logprobs\":[],\"output_index\":0,\"sequence_number\":4,\"type\":\"response.output_text.delta\"}\n\n"
    );
    let created = std::str::from_utf8(&frames[0]).unwrap();
    assert!(created.starts_with(
        "event: response.created\ndata: {\"response\":{\"background\":false,\"completed_at\":null,\"created_at\":1700000000,\"error\":null,"
    ));
    assert!(created.ends_with("},\"sequence_number\":0,\"type\":\"response.created\"}\n\n"));
}

#[test]
fn each_tool_call_is_a_function_call_item_and_text_stops() {
    let mut c = converter();
    let call = |id: &str, name: &str, index: u64| {
        chunk(json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": id, "function": {"index": index, "name": name, "arguments": {"city": "Paris"}}}]}))
    };
    let first = events(&c.process(&call("call_a", "get_weather", 0)));
    assert_eq!(
        kinds(&first),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
        ]
    );
    let added = &first[2].1;
    assert_eq!(added["output_index"], 0);
    assert_eq!(added["item"]["status"], "in_progress");
    assert_eq!(added["item"]["arguments"], "");
    assert_eq!(added["item"]["call_id"], "call_a");
    let id = added["item"]["id"].as_str().unwrap();
    assert!(id.starts_with("fc_") && id.ends_with("_0"), "{id}");
    assert_eq!(first[3].1["delta"], r#"{"city":"Paris"}"#);
    assert_eq!(first[3].1["item_id"], id);
    assert_eq!(first[4].1["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(first[5].1["item"]["status"], "completed");
    assert_eq!(first[5].1["item"]["id"], id);

    let second = events(&c.process(&call("call_b", "get_time", 1)));
    assert_eq!(second.len(), 4);
    assert_eq!(second[0].1["output_index"], 1);
    assert!(events(&c.process(&chunk(json!({"content": "late text"})))).is_empty());
    let last = events(&c.process(&done("stop")));
    assert_eq!(kinds(&last), ["response.completed"]);
    let output = last[0].1["response"]["output"].as_array().unwrap();
    let names: Vec<&str> = output.iter().map(|o| o["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_weather", "get_time"]);
    assert_eq!(last[0].1["sequence_number"], 10);
}

#[test]
fn thinking_streams_as_a_reasoning_item_closed_by_the_text() {
    let mut c = converter();
    let first = events(&c.process(&chunk(json!({"thinking": "Let me think..."}))));
    assert_eq!(
        kinds(&first),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_text.delta",
        ]
    );
    assert_eq!(first[2].1["item"]["type"], "reasoning");
    assert_eq!(first[2].1["item"]["summary"], json!([]));
    let rs = first[2].1["item"]["id"].as_str().unwrap().to_owned();
    assert!(rs.starts_with("rs_"));
    assert_eq!(first[3].1["delta"], "Let me think...");
    assert_eq!(first[3].1["summary_index"], 0);

    let second = events(&c.process(&chunk(json!({"content": "The answer is 42"}))));
    assert_eq!(
        kinds(&second),
        [
            "response.reasoning_summary_text.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
        ]
    );
    assert_eq!(second[0].1["text"], "Let me think...");
    let item = &second[1].1["item"];
    assert_eq!(
        item,
        &json!({"encrypted_content": "Let me think...", "id": rs, "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Let me think..."}]})
    );
    assert_eq!(second[2].1["output_index"], 1);
    let last = events(&c.process(&done("stop")));
    let output = last[3].1["response"]["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(output[1]["type"], "message");
    assert_eq!(last[0].1["output_index"], 1);
}

#[test]
fn a_length_stop_completes_like_any_other() {
    let mut c = converter();
    c.process(&chunk(json!({"content": "cut sh"})));
    let last = events(&c.process(&done("length")));
    assert_eq!(last.last().unwrap().0, "response.completed");
    assert_eq!(last.last().unwrap().1["response"]["status"], "completed");
}

#[test]
fn a_done_chunk_alone_still_opens_and_completes_the_response() {
    let mut c = converter();
    let all = events(&c.process(&done("stop")));
    assert_eq!(
        kinds(&all),
        [
            "response.created",
            "response.in_progress",
            "response.completed"
        ]
    );
    assert_eq!(all[2].1["response"]["output"], json!([]));
}

#[test]
fn an_error_part_way_ends_with_response_failed() {
    let mut c = converter();
    let first = c.process(&chunk(json!({"content": "Hel"})));
    let failed = events(&c.fail(&ProxyError::UpstreamTimeout(30_000)));
    assert!(c.is_done());
    assert_eq!(kinds(&failed), ["response.failed"]);
    assert_eq!(failed[0].1["sequence_number"], first.len());
    assert_eq!(
        failed[0].1["response"],
        json!({"error": {"code": "api_error", "message": "upstream timed out after 30000 ms"},
               "id": "resp_123", "model": "gpt-oss:20b", "object": "response", "output": [],
               "status": "failed", "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}})
    );
}

#[test]
fn an_error_before_any_chunk_still_opens_the_response() {
    let mut c = converter();
    let limited = ProxyError::Limited {
        status: http::StatusCode::TOO_MANY_REQUESTS,
        message: "slow down".into(),
        headers: http::HeaderMap::new(),
    };
    let failed = events(&c.fail(&limited));
    assert_eq!(
        kinds(&failed),
        [
            "response.created",
            "response.in_progress",
            "response.failed"
        ]
    );
    assert_eq!(
        failed[2].1["response"]["error"]["code"],
        "rate_limit_exceeded"
    );
    let internal = events(&converter().fail(&ProxyError::Internal("secret".into())));
    assert_eq!(
        internal[2].1["response"]["error"]["message"],
        "internal error"
    );
}
