//! OpenAI's Responses API through augur against the fake Ollama: tools
//! emulated for a model without them (whole and streamed, tool_choice,
//! function_call_output in history), structured output and JSON mode
//! repaired, hosted tools (Codex's `web_search`) left out for a model whose
//! tools augur emulates, forwarded byte for byte when nothing applies,
//! errors in OpenAI's shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{client, events, header, pair, scrub_times};
use serde_json::{Value, json};

fn weather() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}})
}

/// A Responses request to `model` whose input is `text` (the `tool-json`
/// fake answers it back as the model's output).
fn request(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "tools": [weather()], "input": text})
}

const CALL: &str = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#;

async fn send(url: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{url}/v1/responses"))
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn tools_are_emulated_as_function_call_items() {
    let (fake, augur) = pair().await;
    let r = send(&augur.url, &request("tool-json", CALL, false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    let output = v["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "no message item beside calls: {v}");
    let call = &output[0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "get_weather");
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(sent.get("tools").is_none());
    assert_eq!(fake.requests("/v1/responses"), 0);
}

#[tokio::test]
async fn a_streamed_call_has_the_function_call_events() {
    let (_fake, augur) = pair().await;
    let text = send(&augur.url, &request("tool-json", CALL, true))
        .await
        .text()
        .await
        .unwrap();
    let ev = events(&text);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"), "{text}");
    assert_eq!(names.last(), Some(&"response.completed"), "{text}");
    for name in [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let seqs: Vec<u64> = ev
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let done = ev
        .iter()
        .find(|(n, _)| n == "response.function_call_arguments.done")
        .unwrap();
    let args: Value = serde_json::from_str(done.1["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
}

#[tokio::test]
async fn function_call_output_in_history_reaches_the_model() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "tool-json", "tools": [weather()], "input": [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21C"},
        {"role": "user", "content": r#"{"response":"Sunny."}"#}
    ]});
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["output"][0]["content"][0]["text"], "Sunny.", "{v}");
    let sent = fake.last_json("/api/chat").unwrap().to_string();
    assert!(
        sent.contains("sunny, 21C") && sent.contains("get_weather"),
        "{sent}"
    );
}

#[tokio::test]
async fn structured_output_is_validated() {
    let (fake, augur) = pair().await;
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer"}}, "required": ["name", "age"]});
    let body = json!({"model": "gemma3", "input": "Who?",
        "text": {"format": {"type": "json_schema", "name": "person", "schema": schema}}});
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let text = v["output"][0]["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(text).unwrap();
    assert!(answer["age"].is_i64(), "{answer}");
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(sent["format"].is_object());
}

#[tokio::test]
async fn nothing_to_change_answers_as_the_upstream_does() {
    let (fake, augur) = pair().await;
    // No tools: forwarded to the upstream's own route. A tool-capable
    // model given tools: its answer is read through `/api/chat` for calls
    // written as text (`tools.rescue_text_calls`), and renders as the
    // upstream's own layer renders it.
    for (body, read) in [
        (json!({"model": "gemma3", "input": "hi"}), 0),
        (request("llama3.2", "weather in Paris?", false), 1),
    ] {
        let direct = send(&fake.url(), &body).await.text().await.unwrap();
        let via = send(&augur.url, &body).await.text().await.unwrap();
        let scrub = |t: &str| {
            let mut v: Value = serde_json::from_str(t).unwrap();
            v["id"] = json!("resp");
            v["created_at"] = json!(0);
            // Seconds on the clock: two answers may fall either side of one.
            if v.get("completed_at").is_some_and(|c| !c.is_null()) {
                v["completed_at"] = json!(0);
            }
            if let Some(items) = v["output"].as_array_mut() {
                for i in items {
                    i["id"] = json!("id");
                    if i.get("call_id").is_some() {
                        i["call_id"] = json!("call");
                    }
                }
            }
            scrub_times(&v.to_string())
        };
        assert_eq!(scrub(&via), scrub(&direct), "{body}");
        assert_eq!(fake.requests("/api/chat"), read, "{body}");
    }
}

#[tokio::test]
async fn errors_take_openais_shape() {
    let (_fake, augur) = pair().await;
    let r = send(
        &augur.url,
        &json!({"model": "gemma3", "input": 5, "tools": [weather()]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
}

/// A JSON-mode request (`text.format: {"type": "json_object"}`).
fn json_mode(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "input": "Why is the sky blue? Answer in JSON.",
        "text": {"format": {"type": "json_object"}}})
}

#[tokio::test]
async fn json_mode_is_repaired_like_chat_completions() {
    let (fake, augur) = pair().await;
    let r = send(&augur.url, &json_mode("bad-json", false)).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap_or_default();
    assert!(repaired.contains("code_fence"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["text"]["format"], json!({"type": "json_object"}));
    let text = v["output"][0]["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(answer.is_object(), "{answer}");
    assert_eq!(fake.last_json("/api/chat").unwrap()["format"], "json");
    assert_eq!(fake.requests("/v1/responses"), 0);
}

#[tokio::test]
async fn json_mode_streams_as_json() {
    let (fake, augur) = pair().await;
    let text = send(&augur.url, &json_mode("gemma3", true))
        .await
        .text()
        .await
        .unwrap();
    let ev = events(&text);
    assert_eq!(
        ev.last().map(|e| e.0.as_str()),
        Some("response.completed"),
        "{text}"
    );
    let streamed: String = ev
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap().to_string())
        .collect();
    let answer: Value = serde_json::from_str(&streamed).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(answer.is_object(), "{answer}");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(
        (&sent["format"], &sent["stream"]),
        (&json!("json"), &json!(true))
    );
    assert_eq!(fake.requests("/v1/responses"), 0);
}

#[tokio::test]
async fn hosted_tools_are_left_out_for_an_emulated_model() {
    let (fake, augur) = pair().await;
    // As Codex sends it: its functions and the hosted web search.
    let mut body = request("tool-json", CALL, false);
    body["tools"] = json!([weather(), {"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}]);
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-emulated"), Some("tools"));
    assert_eq!(
        header(&r, "x-augur-dropped-tools"),
        Some("web_search, file_search")
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["output"][0]["type"], "function_call", "{v}");
    assert_eq!(v["output"][0]["name"], "get_weather");
    assert_eq!(fake.requests("/v1/responses"), 0);

    // Streamed, with `web_search_preview`.
    body["stream"] = json!(true);
    body["tools"] = json!([weather(), {"type": "web_search_preview"}]);
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-augur-dropped-tools"),
        Some("web_search_preview")
    );
    let text = r.text().await.unwrap();
    assert!(
        text.contains("response.function_call_arguments.done"),
        "{text}"
    );

    // Nothing else to change: the request goes to the upstream's own
    // route without them.
    let body = json!({"model": "gemma3", "input": "hi", "tools": [{"type": "web_search"}]});
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-dropped-tools"), Some("web_search"));
    assert_eq!(fake.requests("/v1/responses"), 1);
    assert_eq!(fake.last_json("/v1/responses").unwrap()["tools"], json!([]));
}

#[tokio::test]
async fn web_search_goes_to_the_upstream_for_a_model_with_tools() {
    let (fake, augur) = pair().await;
    let mut body = request("llama3.2", "weather in Paris?", false);
    body["tools"] = json!([weather(), {"type": "web_search"}]);
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-dropped-tools"), None);
    assert_eq!(fake.requests("/v1/responses"), 1);
    assert_eq!(
        fake.last_json("/v1/responses").unwrap()["tools"][1],
        json!({"type": "web_search"})
    );

    // A hosted tool Ollama does not run is left out for it too.
    body["tools"] = json!([weather(), {"type": "file_search", "vector_store_ids": ["vs_1"]}]);
    let r = send(&augur.url, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-dropped-tools"), Some("file_search"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["output"][0]["name"], "get_weather", "{v}");
}
