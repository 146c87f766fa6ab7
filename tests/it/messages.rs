//! Anthropic's Messages API through augur against the fake Ollama: tools
//! emulated for a model without them (whole and streamed, tool_choice,
//! tool results in history), structured outputs (`output_config.format`,
//! `output_format`) validated, repaired and retried, forwarded byte for
//! byte when nothing applies, and every error in Anthropic's shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{client, events, formats::person, header, pair, post, scrub_times};
use serde_json::{Value, json};

fn weather() -> Value {
    json!({"name": "get_weather", "description": "Current weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}})
}

/// A Messages request to `model` whose last user text is `text` (the
/// `tool-json` fake answers it back as the model's output).
fn request(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 256, "stream": stream, "tools": [weather()],
        "messages": [{"role": "user", "content": text}]})
}

const CALL: &str = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#;

#[tokio::test]
async fn tools_are_emulated_as_tool_use_blocks() {
    let (fake, augur) = pair().await;
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&request("tool-json", CALL, false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["stop_reason"], "tool_use");
    let block = &v["content"][0];
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["name"], "get_weather");
    assert_eq!(block["input"], json!({"city": "Paris"}));
    assert!(
        block["id"].as_str().unwrap().starts_with("call_"),
        "{block}"
    );
    assert!(v["usage"]["output_tokens"].as_u64().unwrap() > 0);
    // The upstream saw a constrained /api/chat request without tools.
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(sent.get("tools").is_none());
    assert!(sent["format"]["anyOf"].is_array() || sent["format"].is_object());
    assert_eq!(fake.requests("/v1/messages"), 0);
}

#[tokio::test]
async fn a_streamed_tool_call_is_one_tool_use_block() {
    let (_fake, augur) = pair().await;
    let text = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&request("tool-json", CALL, true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let ev = events(&text);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ],
        "{text}"
    );
    assert_eq!(ev[1].1["content_block"]["type"], "tool_use");
    assert_eq!(ev[2].1["delta"]["type"], "input_json_delta");
    let input: Value =
        serde_json::from_str(ev[2].1["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"city": "Paris"}));
    assert_eq!(ev[4].1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn a_plain_answer_streams_as_text_deltas() {
    let (_fake, augur) = pair().await;
    let reply = r#"{"response":"It is sunny in Paris today."}"#;
    let text = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&request("tool-json", reply, true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let ev = events(&text);
    let answer: String = ev
        .iter()
        .filter(|(n, d)| n == "content_block_delta" && d["delta"]["type"] == "text_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(answer, "It is sunny in Paris today.");
    assert!(ev.len() > 6, "text arrives in pieces: {text}");
    let stop = ev.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(stop.1["delta"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn tool_results_in_history_reach_the_model() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "tool-json", "max_tokens": 64, "tools": [weather()],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny, 21C"}]},
        {"role": "user", "content": r#"{"response":"Sunny."}"#}
    ]});
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["content"][0]["text"], "Sunny.");
    let sent = fake.last_json("/api/chat").unwrap().to_string();
    assert!(sent.contains("sunny, 21C"), "{sent}");
    assert!(sent.contains("get_weather"), "{sent}");
}

#[tokio::test]
async fn nothing_to_change_answers_as_the_upstream_does() {
    let (fake, augur) = pair().await;
    // No tools: forwarded to the upstream's own route. A tool-capable
    // model under `emulate_tools: auto`: its answer is read through
    // `/api/chat` for calls written as text (`tools.rescue_text_calls`),
    // and renders as the upstream's own layer renders it.
    for (body, read) in [
        (
            json!({"model": "gemma3", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}),
            0,
        ),
        (request("llama3.2", "weather in Paris?", false), 1),
    ] {
        let direct = client()
            .post(format!("{}/v1/messages", fake.url()))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let via = client()
            .post(format!("{}/v1/messages", augur.url))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let ids = |t: &str| {
            let mut v: Value = serde_json::from_str(t).unwrap();
            v["id"] = json!("msg");
            if let Some(blocks) = v["content"].as_array_mut() {
                for b in blocks {
                    if b.get("id").is_some() {
                        b["id"] = json!("id");
                    }
                }
            }
            scrub_times(&v.to_string())
        };
        assert_eq!(ids(&via), ids(&direct), "{body}");
        assert_eq!(fake.requests("/api/chat"), read, "{body}");
    }
}

#[tokio::test]
async fn a_forcing_tool_choice_is_emulated_even_for_a_tool_model() {
    let (fake, augur) = pair().await;
    let mut body = request("llama3.2", CALL, false);
    body["tool_choice"] = json!({"type": "any"});
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    assert_eq!(fake.requests("/v1/messages"), 0);
}

#[tokio::test]
async fn errors_take_anthropics_shape() {
    let (_fake, augur) = pair().await;
    // Refused by augur before translation: a body it cannot read.
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .body(r#"{"Model":"gemma3"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    // Refused by translation, with Ollama's text.
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&json!({"model": "gemma3", "tools": [weather()], "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["message"],
        "max_tokens is required and must be positive"
    );
    assert!(v["request_id"].as_str().unwrap().starts_with("req_"));
}

/// A Messages request for `model` whose answer must follow `person()`,
/// as `client.messages.parse` sends it (`output_config.format`).
fn structured(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 256, "stream": stream,
        "output_config": {"format": {"type": "json_schema", "schema": person()}},
        "messages": [{"role": "user", "content": "Who?"}]})
}

#[tokio::test]
async fn structured_output_is_repaired_and_retried_as_a_text_block() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/v1/messages", &structured("bad-json", false)).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap_or_default();
    assert!(repaired.contains("code_fence"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["content"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["content"][0]["type"], "text");
    let answer: Value = serde_json::from_str(v["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer, json!({"name": "x", "age": 1}));
    // The schema went upstream as Ollama's `format`.
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(sent["format"]["required"], json!(["name", "age"]));
    assert_eq!(fake.requests("/v1/messages"), 0);

    // The beta's top-level `output_format`; a schema-invalid first answer
    // is asked again.
    let mut body = structured("invalid-then-valid", false);
    let format = body["output_config"]["format"].take();
    body.as_object_mut().unwrap().remove("output_config");
    body["output_format"] = format;
    let r = post(&augur, "/v1/messages", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    let answer: Value = serde_json::from_str(v["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer, json!({"name": "x", "age": 1}));
}

#[tokio::test]
async fn structured_output_streams_valid_json_as_text_deltas() {
    let (_fake, augur) = pair().await;
    let r = post(&augur, "/v1/messages", &structured("bad-json", true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), Some("text/event-stream"));
    let text = r.text().await.unwrap();
    let ev = events(&text);
    assert_eq!(ev.first().map(|e| e.0.as_str()), Some("message_start"));
    assert_eq!(ev.last().map(|e| e.0.as_str()), Some("message_stop"));
    let starts: Vec<&Value> = ev
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, d)| &d["content_block"]["type"])
        .collect();
    assert_eq!(starts, [&json!("text")], "{text}");
    let answer: String = ev
        .iter()
        .filter(|(n, d)| n == "content_block_delta" && d["delta"]["type"] == "text_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    let answer: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(answer, json!({"name": "x", "age": 1}));
    let stop = ev.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(stop.1["delta"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn a_malformed_output_format_is_refused_in_anthropics_shape() {
    let (fake, augur) = pair().await;
    for (format, message) in [
        (
            json!({"output_format": {"type": "json_object"}}),
            "output_format.type: Input should be 'json_schema'",
        ),
        (
            json!({"output_config": {"format": {"type": "json_schema"}}}),
            "output_config.format.schema: Field required",
        ),
    ] {
        let mut body = json!({"model": "gemma3", "max_tokens": 16,
            "messages": [{"role": "user", "content": "x"}]});
        body.as_object_mut()
            .unwrap()
            .extend(format.as_object().unwrap().clone());
        let r = post(&augur, "/v1/messages", &body).await;
        assert_eq!(r.status(), 400, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["message"], message);
    }
    assert_eq!(fake.requests("/api/chat"), 0);
    assert_eq!(fake.requests("/v1/messages"), 0);
}

/// Ollama's Anthropic layer answers a request for thinking to a model that
/// cannot think without thinking, rather than refusing it: so does augur
/// when it does not emulate thinking (the pipeline decides, from the
/// model's capabilities).
#[tokio::test]
async fn thinking_a_model_cannot_do_is_dropped_when_not_emulated() {
    let fake = fake_ollama::FakeOllama::builder().start().await;
    let augur = common::formats::with_policy(&fake, "defaults:\n  think_emulation: false\n").await;
    let mut body = request("tool-json", CALL, false);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["content"][0]["type"], "tool_use", "{v}");
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(sent.get("think").is_none(), "{sent}");

    // A model that can think keeps it.
    let mut body = request("qwen3", "hi", false);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    body["output_config"] = json!({"format": {"type": "json_schema", "schema": person()}});
    let r = client()
        .post(format!("{}/v1/messages", augur.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(
        r.status().is_success() || r.status() == 422,
        "{}",
        r.status()
    );
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(sent["think"], json!(true), "{sent}");
}

/// Claude Code declares Anthropic's server web search with its tools. On a
/// model without native tools augur emulates the functions and leaves the
/// search out, naming it in `X-Augur-Dropped-Tools`, whole and streamed.
#[tokio::test]
async fn server_web_search_is_left_out_for_an_emulated_model() {
    let (fake, augur) = pair().await;
    let search = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5});
    for stream in [false, true] {
        let mut body = request("tool-json", CALL, stream);
        body["tools"] = json!([search, weather()]);
        let r = post(&augur, "/v1/messages", &body).await;
        assert_eq!(r.status(), 200, "stream={stream}");
        assert_eq!(header(&r, "x-augur-emulated"), Some("tools"));
        assert_eq!(
            header(&r, "x-augur-dropped-tools"),
            Some("web_search_20250305")
        );
        let text = r.text().await.unwrap();
        assert!(text.contains("get_weather"), "{text}");
        let sent = fake.last_json("/api/chat").unwrap().to_string();
        assert!(!sent.contains("web_search"), "{sent}");
    }
    assert_eq!(fake.requests("/v1/messages"), 0);

    // Nothing else to change: the request goes to the upstream's own
    // route without it.
    let body = json!({"model": "gemma3", "max_tokens": 64, "tools": [search],
        "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&augur, "/v1/messages", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-augur-dropped-tools"),
        Some("web_search_20250305")
    );
    assert_eq!(fake.requests("/v1/messages"), 1);
    let sent = fake.last_json("/v1/messages").unwrap();
    assert_eq!(sent["tools"], json!([]), "{sent}");
}

/// For a model with native tools, Ollama runs the search: the request
/// goes to its `/v1/messages` as the client sent it.
#[tokio::test]
async fn server_web_search_goes_to_the_upstream_for_a_model_with_tools() {
    let (fake, augur) = pair().await;
    let search = json!({"type": "web_search_20250305", "name": "web_search"});
    let mut body = request("llama3.2", "weather in Paris?", false);
    body["tools"] = json!([search, weather()]);
    let r = post(&augur, "/v1/messages", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-dropped-tools"), None);
    assert_eq!(fake.requests("/v1/messages"), 1);
    assert_eq!(fake.last_json("/v1/messages").unwrap()["tools"][0], search);
}
