//! Tool-call emulation end to end against the fake Ollama: the request
//! augur sends, the answers it synthesizes, streaming chunk sequences,
//! tool_choice, retries, and the OpenAI surface.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::weather_tool;
use common::{client, ndjson, pair, post, start_with};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

#[tokio::test]
async fn a_tool_call_comes_back_as_ollamas_tool_calls() {
    let (fake, augur) = pair().await;
    let reply = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#;
    let body = json!({
        "model": "tool-json", "stream": false,
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": reply}],
        "tools": [weather_tool()]
    });
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let msg = &v["message"];
    assert_eq!(msg["role"], "assistant");
    assert_eq!(msg["content"], "");
    let call = &msg["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["function"]["index"], 0);
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], json!({"city": "Paris"}));
    assert_eq!(v["done"], true);
    assert_eq!(v["done_reason"], "stop");
    assert!(v["eval_count"].as_u64().unwrap() > 0);

    let sent = fake.last_json("/api/chat").unwrap();
    assert!(
        sent.get("tools").is_none(),
        "tools must not reach the upstream"
    );
    assert!(sent["format"]["anyOf"].is_array(), "{}", sent["format"]);
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are terse."),
        "the client's system prompt is kept: {system}"
    );
    assert!(system.contains("get_weather"));
}

#[tokio::test]
async fn streamed_calls_follow_ollamas_chunk_sequence() {
    let (_fake, augur) = pair().await;
    let reply = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris","days":2}}}"#;
    let body = json!({"model": "tool-json", "messages": [{"role": "user", "content": reply}], "tools": [weather_tool()]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.headers()["content-type"], "application/x-ndjson");
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_eq!(chunks[0]["done"], false);
    assert_eq!(chunks[0]["message"]["content"], "");
    assert_eq!(
        chunks[0]["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris", "days": 2})
    );
    assert_eq!(chunks[1]["done"], true);
    assert!(
        chunks[1]["message"].get("tool_calls").is_none(),
        "the done chunk repeats nothing"
    );

    // The native sequence from a tool-capable model has the same shape.
    let native = json!({"model": "llama3.2", "messages": [{"role": "user", "content": "x"}], "tools": [weather_tool()]});
    let r = post(&augur, "/api/chat", &native).await;
    let native_chunks = ndjson(&r.text().await.unwrap());
    let shape = |c: &Value| {
        let mut keys: Vec<String> = c["message"].as_object().unwrap().keys().cloned().collect();
        keys.sort();
        (c["done"].clone(), keys)
    };
    assert_eq!(
        chunks.iter().map(shape).collect::<Vec<_>>(),
        native_chunks.iter().map(shape).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_plain_answer_streams_token_by_token() {
    let (_fake, augur) = pair().await;
    let reply = r#"{"response":"Hello there, it is sunny in Paris today."}"#;
    let body = json!({"model": "tool-json", "messages": [{"role": "user", "content": reply}], "tools": [weather_tool()]});
    let text = post(&augur, "/api/chat", &body).await.text().await.unwrap();
    let chunks = ndjson(&text);
    assert!(
        chunks.len() > 4,
        "answer text should arrive in pieces: {chunks:?}"
    );
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(content, "Hello there, it is sunny in Paris today.");
    assert!(
        chunks
            .iter()
            .all(|c| c["message"].get("tool_calls").is_none())
    );
    assert_eq!(chunks.last().unwrap()["done"], true);
}

#[tokio::test]
async fn invalid_arguments_are_retried_with_feedback() {
    let bad = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris","days":0}}}"#;
    let good = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris","days":3}}}"#;
    let fake = FakeOllama::builder()
        .script("scripted", vec![bad.into(), good.into()])
        .start()
        .await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let body = json!({"model": "scripted", "stream": false, "messages": [{"role": "user", "content": "weather?"}], "tools": [weather_tool()]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-augur-attempts"], "2");
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"]["days"],
        3
    );
    let retry = fake.last_json("/api/chat").unwrap();
    let last = retry["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("invalid"),
        "{last}"
    );
}

#[tokio::test]
async fn still_invalid_after_the_last_attempt_is_422_naming_the_tool() {
    let bad = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris","days":0}}}"#;
    let fake = FakeOllama::builder()
        .script("scripted", vec![bad.into(), bad.into()])
        .start()
        .await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let body = json!({"model": "scripted", "stream": false, "messages": [{"role": "user", "content": "weather?"}], "tools": [weather_tool()]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    let err = v["error"].as_str().unwrap();
    assert!(
        err.contains("get_weather") && err.contains("/days"),
        "{err}"
    );
}

#[tokio::test]
async fn coercible_arguments_are_repaired_and_reported() {
    let reply = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris","days":"4"}}}"#;
    let (_fake, augur) = pair().await;
    let body = json!({"model": "tool-json", "stream": false, "messages": [{"role": "user", "content": reply}], "tools": [weather_tool()]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("x-augur-repaired"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"]["days"],
        4
    );
}

#[tokio::test]
async fn tool_choice_none_strips_tools_and_required_forbids_an_answer() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "gemma3", "stream": false, "messages": [{"role": "user", "content": "hi"}], "tools": [weather_tool()], "tool_choice": "none"});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(sent.get("tools").is_none() && sent.get("format").is_none());

    let body = json!({"model": "gemma3", "stream": false, "messages": [{"role": "user", "content": "hi"}], "tools": [weather_tool()], "tool_choice": "required"});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(
        !sent["format"].to_string().contains("\"response\""),
        "{}",
        sent["format"]
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );

    let body = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}], "tools": [weather_tool()], "tool_choice": {"type": "function", "function": {"name": "nope"}}});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn tool_capable_models_pass_through_untouched() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "llama3.2", "stream": false, "messages": [{"role": "user", "content": "x"}], "tools": [weather_tool()]});
    let raw = serde_json::to_vec(&body).unwrap();
    let r = client()
        .post(format!("{}/api/chat", augur.url))
        .body(raw.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(fake.last_request_to("/api/chat").unwrap().body, raw);
}

#[tokio::test]
async fn history_with_calls_and_results_is_rewritten_as_text() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "gemma3", "stream": false, "tools": [weather_tool()], "messages": [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_name": "get_weather", "content": "{\"temp\": 21}"},
        {"role": "user", "content": "and so?"}
    ]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let sent = fake.last_json("/api/chat").unwrap();
    let messages = sent["messages"].as_array().unwrap();
    assert!(messages.iter().all(|m| m["role"] != "tool"));
    let all = sent["messages"].to_string();
    assert!(all.contains("Tool result for get_weather"), "{all}");
}

#[tokio::test]
async fn openai_clients_get_openai_tool_calls() {
    let (_fake, augur) = pair().await;
    let reply = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#;
    let body = json!({"model": "tool-json", "messages": [{"role": "user", "content": reply}], "tools": [weather_tool()]});
    let r = post(&augur, "/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["arguments"], "{\"city\":\"Oslo\"}");

    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let r = post(&augur, "/v1/chat/completions", &streaming).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert!(text.contains("\"finish_reason\":\"tool_calls\""), "{text}");
    assert!(text.contains("\"tool_calls\":[{\"id\":\"call_"), "{text}");
}

#[tokio::test]
async fn show_advertises_tools_for_emulated_models_only() {
    let (_fake, augur) = pair().await;
    let show = |m: &str| {
        let url = format!("{}/api/show", augur.url);
        let m = m.to_string();
        async move {
            let v: Value = client()
                .post(url)
                .json(&json!({"model": m}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["capabilities"].clone()
        }
    };
    assert_eq!(
        show("gemma3").await,
        json!(["completion", "vision", "tools"])
    );
    assert_eq!(show("llama3.2").await, json!(["completion", "tools"]));
    let tags: Value = client()
        .get(format!("{}/api/tags", augur.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let gemma = tags["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "gemma3:latest")
        .unwrap()
        .clone();
    assert!(
        gemma["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("tools"))
    );
}

/// With `think`, tools are emulated inside the thinking object: the
/// reasoning comes back as `thinking`, streamed as the model writes it,
/// and the calls as before.
#[tokio::test]
async fn thinking_and_tools_are_emulated_together() {
    let reply = r#"{"reasoning": "The user wants the weather.", "answer": {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}}"#;
    let fake = FakeOllama::builder()
        .script("scripted", vec![reply.into(), reply.into()])
        .start()
        .await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let body = json!({"model": "scripted", "stream": false, "think": true,
        "messages": [{"role": "user", "content": "weather?"}], "tools": [weather_tool()]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["thinking"], "The user wants the weather.");
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"})
    );
    let sent = fake.last_json("/api/chat").unwrap();
    assert!(sent.get("think").is_none());
    let keys: Vec<&String> = sent["format"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["reasoning", "answer"], "{}", sent["format"]);

    let mut body = body;
    body["stream"] = json!(true);
    let chunks = ndjson(&post(&augur, "/api/chat", &body).await.text().await.unwrap());
    let thinking: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["message"]["thinking"].as_str())
        .collect();
    assert!(thinking.len() > 1, "thinking streams in pieces: {chunks:?}");
    assert_eq!(thinking.concat(), "The user wants the weather.");
    let call_at = chunks
        .iter()
        .position(|c| c["message"].get("tool_calls").is_some())
        .unwrap();
    let last_thinking = chunks
        .iter()
        .rposition(|c| c["message"].get("thinking").is_some())
        .unwrap();
    assert!(last_thinking < call_at, "thinking before the call");
    assert_eq!(chunks.last().unwrap()["done"], true);
}

/// Two calls to one tool whose results come back out of order: on every
/// surface, each result reaches the model with the call it answers.
#[tokio::test]
async fn results_of_calls_to_one_tool_reach_the_model_with_their_calls() {
    use common::surfaces::{self, Surface};
    let (fake, augur) = pair().await;
    let messages = [
        json!({"role": "user", "content": "Weather in Paris and Rome?"}),
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_a", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"id": "call_b", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]}),
        json!({"role": "tool", "tool_name": "get_weather", "tool_call_id": "call_b", "content": "rain"}),
        json!({"role": "tool", "tool_name": "get_weather", "tool_call_id": "call_a", "content": "sun"}),
        // The `tool-json` fake answers the last user text.
        json!({"role": "user", "content": r#"{"response": "Sun in Paris, rain in Rome."}"#}),
    ];
    for surface in Surface::ALL {
        let body = surfaces::request(surface, "tool-json", &[weather_tool()], &messages, false);
        let r = post(&augur, surface.path(), &body).await;
        assert_eq!(r.status(), 200, "{surface:?}: {}", r.text().await.unwrap());
        let sent = fake.last_json("/api/chat").unwrap();
        let results: Vec<&str> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .filter(|c| c.starts_with("Tool result"))
            .collect();
        assert_eq!(
            results,
            [
                r#"Tool result for get_weather {"city":"Rome"}: rain"#,
                r#"Tool result for get_weather {"city":"Paris"}: sun"#,
            ],
            "{surface:?}"
        );
    }
}
