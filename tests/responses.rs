//! OpenAI's Responses API through augur against the fake Ollama: tools
//! emulated for a model without them (whole and streamed, tool_choice,
//! function_call_output in history), structured output repaired,
//! forwarded byte for byte when nothing applies, errors in OpenAI's shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{client, events, pair, scrub_times};
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
