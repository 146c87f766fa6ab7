//! Native tool calls held to the guarantees of emulated ones (whole and
//! streamed `/api/chat` answers): arguments checked against the declared tool's
//! schema, repaired deterministically, retried with the violations as
//! feedback, `validate.on_failure` deciding after the last attempt; an
//! empty answer asked once more; a valid answer untouched. Against the
//! fake's scripted native `tool_calls` (`script_tool_calls`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{client, header, live::Live, metric, metrics, ndjson};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// The shared `get_weather(city, days?)`, closed to other arguments.
fn weather_tool() -> Value {
    let mut tool = common::weather_tool();
    tool["function"]["parameters"]["additionalProperties"] = json!(false);
    tool
}

fn chat(model: &str) -> Value {
    json!({"model": model, "stream": false, "tools": [weather_tool()],
        "messages": [{"role": "user", "content": "Weather in Paris?"}]})
}

fn call(name: &str, arguments: Value) -> Value {
    json!([{"name": name, "arguments": arguments}])
}

/// augur with `policy` in front of a native tool model answering `replies`.
async fn native_model(replies: Vec<Value>, policy: &str) -> Live {
    let fake = FakeOllama::builder()
        .script_tool_calls("native", replies)
        .start()
        .await;
    Live::with_fake(fake, policy).await
}

async fn ask(live: &Live) -> reqwest::Response {
    client()
        .post(live.url("/api/chat"))
        .json(&chat("native"))
        .send()
        .await
        .unwrap()
}

fn first_call(v: &Value) -> &Value {
    &v["message"]["tool_calls"][0]["function"]
}

/// The user messages of the last request the fake saw.
fn last_user(live: &Live) -> String {
    let last = live.fake.last_request().unwrap();
    let body: Value = serde_json::from_slice(&last.body).unwrap();
    let messages = body["messages"].as_array().unwrap().clone();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_string()
}

/// `v` without what differs between two answers of the fake (the time,
/// the call ids, the durations).
fn steady(mut v: Value) -> Value {
    let fields = v.as_object_mut().unwrap();
    fields.retain(|k, _| k != "created_at" && !k.ends_with("_duration"));
    for c in v["message"]["tool_calls"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("id");
    }
    v
}

#[tokio::test]
async fn a_valid_native_answer_comes_back_untouched() {
    let _ = metrics();
    let valid = call("get_weather", json!({"city": "Paris", "days": 2}));
    let live = native_model(vec![valid.clone(), valid], "{}").await;
    let direct: Value = client()
        .post(format!("{}/api/chat", live.fake.url()))
        .json(&chat("native"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), None);
    assert_eq!(header(&r, "x-augur-validation"), None);
    assert_eq!(header(&r, "x-augur-attempts"), None);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["message"]["tool_calls"][0]["id"]
            .as_str()
            .unwrap()
            .starts_with("call_")
    );
    assert_eq!(steady(v), steady(direct));
    // One upstream call from augur (the other was the test's own).
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

#[tokio::test]
async fn invalid_arguments_are_repaired_deterministically() {
    let live = native_model(
        vec![call(
            "get_weather",
            json!({"city": "Paris", "days": "2", "unit": "C"}),
        )],
        "{}",
    )
    .await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("native_call_repaired"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        first_call(&v)["arguments"],
        json!({"city": "Paris", "days": 2})
    );
    assert_eq!(live.fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn invalid_arguments_are_retried_with_the_violations() {
    let live = native_model(
        vec![
            call("get_weather", json!({"town": 7})),
            call("get_weather", json!({"city": "Paris"})),
        ],
        "{}",
    )
    .await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("native_call_retried"), "{repaired}");
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(first_call(&v)["arguments"], json!({"city": "Paris"}));
    assert_eq!(live.fake.requests("/api/chat"), 2);
    let feedback = last_user(&live);
    assert!(
        feedback.contains("Your previous answer was invalid"),
        "{feedback}"
    );
    assert!(feedback.contains("city"), "{feedback}");
    let last = live.fake.last_request().unwrap();
    let body: Value = serde_json::from_slice(&last.body).unwrap();
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        json!({"town": 7})
    );
}

#[tokio::test]
async fn an_undeclared_tool_is_retried_naming_the_closest() {
    let live = native_model(
        vec![
            call("weather", json!({"city": "Paris"})),
            call("get_weather", json!({"city": "Paris"})),
        ],
        "{}",
    )
    .await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(first_call(&v)["name"], "get_weather");
    let feedback = last_user(&live);
    assert!(
        feedback.contains("\"weather\" is not a declared tool"),
        "{feedback}"
    );
    assert!(
        feedback.contains("did you mean \"get_weather\""),
        "{feedback}"
    );
}

#[tokio::test]
async fn still_invalid_is_422_naming_the_tool() {
    let bad = call("get_weather", json!({"town": 7}));
    let live = native_model(vec![bad.clone(), bad], "{}").await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 422);
    let text = r.text().await.unwrap();
    assert!(text.contains("get_weather"), "{text}");
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

#[tokio::test]
async fn still_invalid_passes_marked_invalid_when_the_policy_says() {
    let bad = call("get_weather", json!({"town": 7}));
    let policy = "defaults:\n  validate: {max_retries: 0, on_failure: pass}\n";
    let live = native_model(vec![bad], policy).await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(first_call(&v)["arguments"], json!({"town": 7}));
    assert_eq!(live.fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn an_empty_answer_is_asked_once_more_emulated() {
    let handle = metrics();
    let envelope = r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#;
    let replies = vec![
        fake_ollama::tool_calls_reply(&json!([])),
        envelope.to_string(),
    ];
    let fake = FakeOllama::builder()
        .script_tools("native", replies)
        .start()
        .await;
    let live = Live::with_fake(fake, "{}").await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("lost_call_recovered"), "{repaired}");
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], "");
    assert_eq!(first_call(&v)["name"], "get_weather");
    assert_eq!(first_call(&v)["arguments"], json!({"city": "Paris"}));
    assert_eq!(live.fake.requests("/api/chat"), 2);
    // The retry went under emulation: the envelope, no native tools.
    let last = live.fake.last_request().unwrap();
    let body: Value = serde_json::from_slice(&last.body).unwrap();
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body["format"].is_object(), "{body}");
    let text = handle.render();
    let recovered = metric(
        &text,
        "augur_native_calls_total",
        &["outcome=\"recovered\""],
    );
    assert!(recovered >= 1.0, "{text}");
}

#[tokio::test]
async fn a_retry_that_comes_back_empty_leaves_the_best_attempt_to_the_policy() {
    let bad = call("get_weather", json!({"town": 7}));
    let live = native_model(vec![bad.clone(), json!([])], "{}").await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 422);
    let text = r.text().await.unwrap();
    assert!(text.contains("get_weather"), "{text}");
    assert_eq!(live.fake.requests("/api/chat"), 2);

    let policy = "defaults:\n  validate: {on_failure: pass}\n";
    let live = native_model(vec![bad, json!([])], policy).await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(first_call(&v)["arguments"], json!({"town": 7}));
}

#[tokio::test]
async fn a_recovered_answer_holds_each_call_once() {
    let envelope = r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_weather","arguments":{"city":"Lyon"}},{"name":"get_weather","arguments":{"city":"Paris"}}]}"#;
    let replies = vec![
        fake_ollama::tool_calls_reply(&json!([])),
        envelope.to_string(),
    ];
    let fake = FakeOllama::builder()
        .script_tools("native", replies)
        .start()
        .await;
    let live = Live::with_fake(fake, "{}").await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let cities: Vec<&Value> = v["message"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["function"]["arguments"]["city"])
        .collect();
    assert_eq!(cities, [&json!("Paris"), &json!("Lyon")]);
}

#[tokio::test]
async fn the_openai_route_gets_the_same_checks() {
    let live = native_model(
        vec![call("get_weather", json!({"city": "Paris", "days": "2"}))],
        "{}",
    )
    .await;
    let r = client()
        .post(live.url("/v1/chat/completions"))
        .json(&chat("native"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("native_call_repaired"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    let args = v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    let args: Value = serde_json::from_str(args).unwrap();
    assert_eq!(args, json!({"city": "Paris", "days": 2}));
}

#[tokio::test]
async fn the_policy_turns_the_checks_off_per_model() {
    let bad = call("get_weather", json!({"town": 7}));
    let empty = json!([]);
    let policy = "models:\n  native*:\n    tools: {native: {validate: false, recover: false}}\n";
    let live = native_model(vec![bad, empty], policy).await;
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), None);
    let v: Value = r.json().await.unwrap();
    assert_eq!(first_call(&v)["arguments"], json!({"town": 7}));
    let r = ask(&live).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), None);
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

// Streamed: each call checked as it comes.

/// The streamed chunks of `url`'s answer to a streamed `chat`.
async fn stream(url: String) -> Vec<Value> {
    let mut body = chat("native");
    body["stream"] = json!(true);
    let r = client().post(url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    ndjson(&r.text().await.unwrap())
}

/// The calls the chunks carry, in order.
fn streamed_calls(chunks: &[Value]) -> Vec<Value> {
    common::tool_calls(chunks)
        .into_iter()
        .map(|c| c["function"].clone())
        .collect()
}

/// The done chunk (the last).
fn done_of(chunks: &[Value]) -> &Value {
    let last = chunks.last().unwrap();
    assert_eq!(last["done"], true, "{chunks:?}");
    last
}

/// A chunk without what differs between two answers of the fake.
fn steady_chunk(mut v: Value) -> Value {
    let fields = v.as_object_mut().unwrap();
    fields.retain(|k, _| k != "created_at" && !k.ends_with("_duration"));
    if let Some(calls) = v["message"]["tool_calls"].as_array_mut() {
        for c in calls {
            c.as_object_mut().unwrap().remove("id");
        }
    }
    v
}

fn streamed_content(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect()
}

#[tokio::test]
async fn a_valid_streamed_call_comes_through_unchanged() {
    let handle = metrics();
    let valid = call("get_weather", json!({"city": "Paris", "days": 2}));
    let live = native_model(vec![valid.clone(), valid], "{}").await;
    let direct = stream(format!("{}/api/chat", live.fake.url())).await;
    let through = stream(live.url("/api/chat")).await;
    assert_eq!(through.len(), direct.len(), "{through:?}");
    for (a, b) in through.iter().zip(&direct) {
        assert_eq!(steady_chunk(a.clone()), steady_chunk(b.clone()));
    }
    assert_eq!(
        streamed_calls(&through),
        [json!({"index": 0, "name": "get_weather", "arguments": {"city": "Paris", "days": 2}})]
    );
    assert!(done_of(&through).get("augur_repaired").is_none());
    // One upstream call from augur (the other was the test's own).
    assert_eq!(live.fake.requests("/api/chat"), 2);
    let text = handle.render();
    assert!(metric(&text, "augur_native_calls_total", &["outcome=\"valid\""]) >= 1.0);
}

#[tokio::test]
async fn a_streamed_call_is_repaired_and_reported() {
    let live = native_model(
        vec![call(
            "get_weather",
            json!({"city": "Paris", "days": "2", "unit": "C"}),
        )],
        "{}",
    )
    .await;
    let chunks = stream(live.url("/api/chat")).await;
    let calls = streamed_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["arguments"], json!({"city": "Paris", "days": 2}));
    let repaired = done_of(&chunks)["augur_repaired"].as_str().unwrap();
    assert!(repaired.contains("native_call_repaired"), "{repaired}");
    assert_eq!(live.fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn a_streamed_undeclared_tool_ends_in_an_error() {
    let policy = "defaults:\n  validate: {max_retries: 0, on_failure: error}\n";
    let live = native_model(vec![call("weather", json!({"city": "Paris"}))], policy).await;
    let chunks = stream(live.url("/api/chat")).await;
    assert!(streamed_calls(&chunks).is_empty(), "{chunks:?}");
    let error = chunks.last().unwrap()["error"].as_str().unwrap();
    assert!(error.contains("\"weather\""), "{error}");
    assert!(error.contains("get_weather"), "{error}");
    assert_eq!(live.fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn a_streamed_undeclared_tool_is_asked_again() {
    let live = native_model(
        vec![
            call("weather", json!({"city": "Paris"})),
            call("get_weather", json!({"city": "Paris"})),
        ],
        "{}",
    )
    .await;
    let chunks = stream(live.url("/api/chat")).await;
    let calls = streamed_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[0]["arguments"], json!({"city": "Paris"}));
    let repaired = done_of(&chunks)["augur_repaired"].as_str().unwrap();
    assert!(repaired.contains("native_call_retried"), "{repaired}");
    assert_eq!(live.fake.requests("/api/chat"), 2);
    let feedback = last_user(&live);
    assert!(
        feedback.contains("\"weather\" is not a declared tool"),
        "{feedback}"
    );
}

#[tokio::test]
async fn a_streamed_invalid_call_passes_marked_invalid_when_the_policy_says() {
    let policy = "defaults:\n  validate: {max_retries: 0, on_failure: pass}\n";
    let live = native_model(vec![call("get_weather", json!({"town": 7}))], policy).await;
    let chunks = stream(live.url("/api/chat")).await;
    let calls = streamed_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["arguments"], json!({"town": 7}));
    assert_eq!(done_of(&chunks)["augur_validation"], "invalid");
    assert_eq!(live.fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn a_lost_streamed_answer_is_recovered() {
    let envelope = r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#;
    let replies = vec![
        fake_ollama::tool_calls_reply(&json!([])),
        envelope.to_string(),
    ];
    let fake = FakeOllama::builder()
        .script_tools("native", replies)
        .start()
        .await;
    let live = Live::with_fake(fake, "{}").await;
    let chunks = stream(live.url("/api/chat")).await;
    let calls = streamed_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[0]["arguments"], json!({"city": "Paris"}));
    assert_eq!(streamed_content(&chunks), "");
    let repaired = done_of(&chunks)["augur_repaired"].as_str().unwrap();
    assert!(repaired.contains("lost_call_recovered"), "{repaired}");
    assert_eq!(live.fake.requests("/api/chat"), 2);
    let last = live.fake.last_request().unwrap();
    let body: Value = serde_json::from_slice(&last.body).unwrap();
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn streamed_plain_text_comes_through_unchanged() {
    let text = "It is sunny in Paris today, with a high of 21 degrees.";
    let fake = FakeOllama::builder()
        .script_tools("native", vec![text.to_string(), text.to_string()])
        .start()
        .await;
    let live = Live::with_fake(fake, "{}").await;
    let direct = stream(format!("{}/api/chat", live.fake.url())).await;
    let through = stream(live.url("/api/chat")).await;
    assert_eq!(streamed_content(&through), text);
    assert_eq!(streamed_content(&through), streamed_content(&direct));
    // Streamed as it came, not gathered into one chunk.
    let pieces = through
        .iter()
        .filter(|c| {
            c["message"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert!(pieces > 2, "{through:?}");
    assert!(streamed_calls(&through).is_empty());
    let done = steady_chunk(done_of(&through).clone());
    assert_eq!(done, steady_chunk(done_of(&direct).clone()));
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

#[tokio::test]
async fn the_policy_turns_the_streamed_checks_off_per_model() {
    let bad = call("weather", json!({"town": 7}));
    let empty = json!([]);
    let policy = "models:\n  native*:\n    tools: {native: {validate: false, recover: false}}\n";
    let live = native_model(vec![bad, empty], policy).await;
    let chunks = stream(live.url("/api/chat")).await;
    let calls = streamed_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["name"], "weather");
    assert!(done_of(&chunks).get("augur_validation").is_none());
    let chunks = stream(live.url("/api/chat")).await;
    assert!(streamed_calls(&chunks).is_empty(), "{chunks:?}");
    assert!(done_of(&chunks).get("augur_repaired").is_none());
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

/// The Anthropic and Responses surfaces run the same checks: a native
/// call with a repairable argument comes back repaired as a `tool_use`
/// block and a `function_call` item.
#[tokio::test]
async fn the_anthropic_and_responses_routes_get_the_same_checks() {
    let reply = call("get_weather", json!({"city": "Paris", "days": "2"}));
    let live = native_model(vec![reply.clone(), reply], "{}").await;
    let anthropic = json!({"model": "native", "max_tokens": 128,
        "tools": [{"name": "get_weather", "description": "Current weather for a city",
            "input_schema": weather_tool()["function"]["parameters"].clone()}],
        "messages": [{"role": "user", "content": "Weather in Paris?"}]});
    let r = client()
        .post(live.url("/v1/messages"))
        .json(&anthropic)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("native_call_repaired"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["content"][0]["type"], "tool_use", "{v}");
    assert_eq!(
        v["content"][0]["input"],
        json!({"city": "Paris", "days": 2})
    );

    let responses = json!({"model": "native", "input": "Weather in Paris?",
        "tools": [{"type": "function", "name": "get_weather",
            "parameters": weather_tool()["function"]["parameters"].clone()}]});
    let r = client()
        .post(live.url("/v1/responses"))
        .json(&responses)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let item = &v["output"][0];
    assert_eq!(item["type"], "function_call", "{v}");
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris", "days": 2}));
}
