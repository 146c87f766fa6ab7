//! Wire tests of `POST /v1/messages` (Anthropic's Messages API as Ollama serves it).

mod common;

use fake_ollama::{FakeOllama, SENTENCE};
use serde_json::{Value, json};

use common::{
    assert_failed_before_stream, assert_stream_headers, assert_unknown_model, encoded, keys, names,
    post, sse,
};

const PATH: &str = "/v1/messages";

fn ask(model: &str, text: &str) -> Value {
    json!({"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": text}]})
}

fn with(mut body: Value, extra: Value) -> Value {
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    body
}

fn weather() -> Value {
    json!([{ "name": "get_weather", "description": "Weather", "input_schema": {
        "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } }])
}

fn is_id(s: &Value, prefix: &str) -> bool {
    let s = s.as_str().unwrap_or("");
    let hex = s.strip_prefix(prefix).unwrap_or("");
    hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

#[tokio::test]
async fn plain_answer() {
    let fake = FakeOllama::builder().start().await;
    let body = with(ask("llama3.2", "hi"), json!({"system": "be brief"}));
    let v = encoded(&post(&fake, PATH, body.clone()).await, 200);
    assert_eq!(
        keys(&v),
        [
            "id",
            "type",
            "role",
            "model",
            "content",
            "stop_reason",
            "usage"
        ]
    );
    assert!(is_id(&v["id"], "msg_"));
    assert_eq!(
        (v["type"].as_str(), v["role"].as_str(), v["model"].as_str()),
        (Some("message"), Some("assistant"), Some("llama3.2"))
    );
    assert_eq!(
        v["content"],
        json!([{ "type": "text", "text": SENTENCE.concat() }])
    );
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(
        v["usage"],
        json!({ "input_tokens": 13, "output_tokens": 11 })
    );
    assert_eq!(fake.last_json(PATH).unwrap(), body);
}

#[tokio::test]
async fn tool_call_whole_and_streamed() {
    let fake = FakeOllama::builder().start().await;
    let body = with(ask("llama3.2", "weather?"), json!({"tools": weather()}));
    let v = post(&fake, PATH, body.clone()).await.json();
    let content = v["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(keys(&content[0]), ["type", "id", "name", "input"]);
    assert_eq!(
        (content[0]["type"].as_str(), content[0]["name"].as_str()),
        (Some("tool_use"), Some("get_weather"))
    );
    assert!(content[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(content[0]["input"], json!({"city": "x"}));
    assert_eq!(v["stop_reason"], "tool_use");

    let r = post(&fake, PATH, with(body, json!({"stream": true}))).await;
    let events = sse(&r);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start = &events[1].1;
    assert_eq!(start["index"], 0);
    assert_eq!(
        keys(&start["content_block"]),
        ["type", "id", "name", "input"]
    );
    assert_eq!(start["content_block"]["input"], json!({}));
    // The whole input arrives in one input_json_delta.
    assert_eq!(
        events[2].1["delta"],
        json!({ "type": "input_json_delta", "partial_json": r#"{"city":"x"}"# })
    );
    assert_eq!(events[4].1["delta"], json!({ "stop_reason": "tool_use" }));
    assert!(!r.text().contains("ping"));
}

#[tokio::test]
async fn tools_refusal_and_errors() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        PATH,
        with(ask("gemma3", "x"), json!({"tools": weather()})),
    )
    .await;
    let v = encoded(&r, 400);
    assert_eq!(keys(&v), ["type", "error", "request_id"]);
    assert_eq!(v["type"], "error");
    assert_eq!(
        v["error"],
        json!({ "type": "invalid_request_error", "message": "registry.ollama.ai/library/gemma3:latest does not support tools" })
    );
    assert!(is_id(&v["request_id"], "req_"));
    assert_unknown_model(&post(&fake, PATH, ask("nope", "x")).await);
    let r = post(
        &fake,
        PATH,
        with(ask("error-500", "x"), json!({"stream": true})),
    )
    .await;
    assert_failed_before_stream(&r);
    // The middleware's checks, in its order, written by gin (charset, no trailing newline).
    for (body, message) in [
        (
            json!({"max_tokens": 5, "messages": []}),
            "model is required",
        ),
        (
            json!({"model": "llama3.2", "messages": []}),
            "max_tokens is required and must be positive",
        ),
        (
            json!({"model": "llama3.2", "max_tokens": 5}),
            "messages is required",
        ),
        (
            json!({"model": "llama3.2", "max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}]}),
            "tool_use block missing required 'name' field",
        ),
    ] {
        let r = post(&fake, PATH, body).await;
        assert_eq!(
            (r.status, r.header("content-type")),
            (400, Some("application/json; charset=utf-8"))
        );
        assert!(r.text().ends_with("}"));
        assert_eq!(
            r.json()["error"],
            json!({ "type": "invalid_request_error", "message": message })
        );
    }
}

#[tokio::test]
async fn streamed_answer_events() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        PATH,
        with(ask("llama3.2", "hi"), json!({"stream": true})),
    )
    .await;
    assert_stream_headers(&r);
    assert!(r.text().starts_with(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_"
    ));
    let events = sse(&r);
    let mut expected = vec!["message_start", "content_block_start"];
    expected.extend(std::iter::repeat_n("content_block_delta", SENTENCE.len()));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names(&events), expected);
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str());
    }
    let message = &events[0].1["message"];
    assert_eq!(
        keys(message),
        ["id", "type", "role", "model", "content", "usage"]
    );
    // message_start estimates the input tokens: ("user" + "hi") / 4, at least 1.
    assert_eq!(
        message["usage"],
        json!({ "input_tokens": 1, "output_tokens": 0 })
    );
    assert_eq!(
        events[1].1,
        json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } })
    );
    assert_eq!(
        events[2].1["delta"],
        json!({ "type": "text_delta", "text": "The" })
    );
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, SENTENCE.concat());
    assert_eq!(
        events[13].1,
        json!({ "type": "content_block_stop", "index": 0 })
    );
    assert_eq!(
        events[14].1,
        json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "input_tokens": 11, "output_tokens": 11 } })
    );
    assert!(
        r.text()
            .ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
    );
}

#[tokio::test]
async fn thinking_and_length() {
    let fake = FakeOllama::builder().start().await;
    let thought = "Okay, the user asks a question.";
    let v = post(&fake, PATH, ask("qwen3", "why?")).await.json();
    assert_eq!(
        v["content"][0],
        json!({ "type": "thinking", "thinking": thought })
    );
    assert_eq!(v["content"][1]["type"], "text");
    let off = with(
        ask("qwen3", "why?"),
        json!({"thinking": {"type": "disabled"}}),
    );
    assert_eq!(
        post(&fake, PATH, off).await.json()["content"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A model that cannot think, asked to: Ollama relaxes thinking instead of refusing.
    let on = with(
        ask("gemma3", "why?"),
        json!({"thinking": {"type": "enabled", "budget_tokens": 1024}}),
    );
    let r = post(&fake, PATH, on).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["content"],
        json!([{ "type": "text", "text": SENTENCE.concat() }])
    );
    let events = sse(&post(
        &fake,
        PATH,
        with(ask("qwen3", "why?"), json!({"stream": true})),
    )
    .await);
    assert_eq!(
        events[1].1["content_block"],
        json!({ "type": "thinking", "thinking": "" })
    );
    assert_eq!(
        events[2].1["delta"],
        json!({ "type": "thinking_delta", "thinking": "Okay" })
    );
    let stops: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "content_block_stop")
        .map(|(_, d)| &d["index"])
        .collect();
    assert_eq!(stops, [&json!(0), &json!(1)]);
    let text_start = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .nth(1)
        .unwrap();
    assert_eq!(text_start.1["index"], 1);
    // max_tokens is num_predict: a cut answer stops with max_tokens.
    let short = json!({"model": "llama3.2", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]});
    let v = post(&fake, PATH, short.clone()).await.json();
    assert_eq!(v["content"][0]["text"], "The sky is blue because");
    assert_eq!(v["stop_reason"], "max_tokens");
    let events = sse(&post(&fake, PATH, with(short, json!({"stream": true}))).await);
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "max_tokens"
    );
}

#[tokio::test]
async fn history_and_content_models() {
    let fake = FakeOllama::builder().start().await;
    let messages = json!([
        { "role": "user", "content": "weather in Paris?" },
        { "role": "assistant", "content": [{ "type": "tool_use", "id": "call_1", "name": "get_weather", "input": { "city": "Paris" } }] },
        { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "call_1", "content": "sunny" },
            { "type": "text", "text": "and tomorrow?" } ] }
    ]);
    let body = json!({"model": "tool-json", "max_tokens": 100, "messages": messages});
    let v = post(&fake, PATH, body).await.json();
    assert_eq!(v["content"][0]["text"], "and tomorrow?");
    let r = post(
        &fake,
        PATH,
        with(ask("stream-cut", "x"), json!({"stream": true})),
    )
    .await;
    assert!(!r.complete && !r.text().contains("message_stop"));
    let r = post(&fake, PATH, ask("echo", "x")).await;
    let echoed: Value =
        serde_json::from_str(r.json()["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, ask("echo", "x"));
}
