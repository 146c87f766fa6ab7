//! Text mode (policy `tools: {mode: text}`): tool emulation without a
//! `format`, the model writing calls in its own form, against scripted
//! answers of the fake Ollama: the request augur sends, calls read from
//! Python-style and tagged answers, whole and streamed, retries with
//! feedback, and the grammar-mode attempt after an answer that cannot be
//! read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client, header, ndjson,
    tool_turns::{MODEL, answer_reply, answered_weather, chat, scripted, weather_tool},
};
use serde_json::{Value, json};

const TEXT_MODE: &str = "defaults:\n  tools: {mode: text}\n";

fn ask() -> Vec<Value> {
    vec![json!({"role": "user", "content": "What is the weather like in Paris right now?"})]
}

/// Every request the scripted model got, in order.
fn sent(live: &common::live::Live) -> Value {
    live.fake.last_json("/api/chat").unwrap()
}

fn system_text(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_python_call_comes_back_as_a_tool_call() {
    let live = scripted(vec![r#"[get_weather(city="Paris")]"#.into()], TEXT_MODE).await;
    let r = chat(&live, false, json!([weather_tool()]), ask()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-emulated"), Some("tools"));
    assert_eq!(header(&r, "x-augur-attempts"), None);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], "");
    let calls = v["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(calls[0]["function"]["arguments"], json!({"city": "Paris"}));

    // No format, no tools: the instruction asks for the Python form.
    let body = sent(&live);
    assert!(body.get("format").is_none(), "{body}");
    assert!(body.get("tools").is_none(), "{body}");
    let system = system_text(&body);
    assert!(system.contains("a Python list of calls"), "{system}");
    assert!(system.ends_with("[get_weather(city=string)]"), "{system}");
    assert!(
        !system.contains("Reply with one JSON object only"),
        "{system}"
    );
}

#[tokio::test]
async fn text_and_calls_stream_as_they_come() {
    let reply = "Let me check that for you.\n[get_weather(city=\"Paris\")]";
    let live = scripted(vec![reply.into()], TEXT_MODE).await;
    let r = chat(&live, true, json!([weather_tool()]), ask()).await;
    let chunks = ndjson(&r.text().await.unwrap());
    let texts: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .filter(|t| !t.is_empty())
        .collect();
    assert!(texts.len() > 2, "text arrives in pieces: {chunks:?}");
    assert_eq!(texts.concat(), "Let me check that for you.");
    let call_at = chunks
        .iter()
        .position(|c| c["message"].get("tool_calls").is_some())
        .unwrap();
    assert_eq!(
        chunks[call_at]["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"})
    );
    assert_eq!(call_at, chunks.len() - 2, "the call, then the done chunk");
    assert_eq!(chunks.last().unwrap()["done"], true);

    // Whole, the same text is the content beside the call.
    live.fake.push_script(MODEL, vec![reply.into()]);
    let r = chat(&live, false, json!([weather_tool()]), ask()).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], "Let me check that for you.");
    assert_eq!(v["message"]["tool_calls"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_plain_answer_is_the_text() {
    let text = "It is sunny in Paris [source: the window].";
    let live = scripted(vec![text.into(), text.into()], TEXT_MODE).await;
    let r = chat(&live, false, json!([weather_tool()]), ask()).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], text);
    assert!(v["message"].get("tool_calls").is_none());
    let r = chat(&live, true, json!([weather_tool()]), ask()).await;
    let chunks = ndjson(&r.text().await.unwrap());
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(content, text);
}

#[tokio::test]
async fn invalid_arguments_are_retried_in_text_mode_with_feedback() {
    let live = scripted(
        vec![
            "get_weather(town=\"Paris\")".into(),
            "get_weather(\"Paris\")".into(),
        ],
        TEXT_MODE,
    )
    .await;
    let r = chat(&live, false, json!([weather_tool()]), ask()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"}),
        "a positional argument takes the first declared parameter"
    );
    let retry = sent(&live);
    assert!(retry.get("format").is_none(), "still text mode: {retry}");
    let feedback = common::tool_turns::last_sent_message(&live);
    assert!(feedback.contains("city"), "{feedback}");
    assert!(feedback.contains("in the same form"), "{feedback}");
}

#[tokio::test]
async fn an_answer_that_cannot_be_read_is_asked_again_in_grammar_mode() {
    let grammar_answer = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#;
    for stream in [false, true] {
        let live = scripted(
            vec!["[get_weather(city=Paris)]".into(), grammar_answer.into()],
            TEXT_MODE,
        )
        .await;
        let r = chat(&live, stream, json!([weather_tool()]), ask()).await;
        assert_eq!(r.status(), 200);
        let calls: Vec<Value> = if stream {
            ndjson(&r.text().await.unwrap())
                .iter()
                .filter_map(|c| c["message"]["tool_calls"].as_array().cloned())
                .flatten()
                .collect()
        } else {
            assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
            let v: Value = r.json().await.unwrap();
            v["message"]["tool_calls"].as_array().unwrap().clone()
        };
        assert_eq!(calls.len(), 1, "stream {stream}");
        assert_eq!(calls[0]["function"]["arguments"], json!({"city": "Paris"}));
        assert_eq!(live.fake.requests("/api/chat"), 2);
        // The second attempt is grammar mode's request, with no feedback.
        let body = sent(&live);
        assert!(body["format"]["anyOf"].is_array(), "{body}");
        assert!(system_text(&body).contains("Reply with one JSON object only"));
        assert_eq!(
            body["messages"].as_array().unwrap().last().unwrap()["content"],
            ask()[0]["content"]
        );
    }
}

#[tokio::test]
async fn a_required_call_that_does_not_come_is_asked_in_grammar_mode() {
    let live = scripted(
        vec![
            "I cannot check the weather.".into(),
            r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#.into(),
        ],
        TEXT_MODE,
    )
    .await;
    let body = json!({"model": MODEL, "stream": true, "tools": [weather_tool()],
        "tool_choice": "required", "messages": ask()});
    let r = client()
        .post(live.url("/api/chat"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(
        chunks.iter().all(|c| c["message"]["content"] == ""),
        "no text went out for a required call: {chunks:?}"
    );
    let calls = common::tool_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert!(sent(&live)["format"].is_object());
}

#[tokio::test]
async fn history_and_instruction_use_the_configured_form() {
    let policy = "defaults:\n  tools: {mode: text, text_format: tool_call}\n";
    let reply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>";
    let live = scripted(vec![reply.into()], policy).await;
    let mut messages = answered_weather();
    messages.push(json!({"role": "user", "content": "And in Lyon?"}));
    let r = chat(&live, false, json!([weather_tool()]), messages).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Lyon"})
    );
    let body = sent(&live);
    let system = system_text(&body);
    assert!(
        system.contains("a <tool_call> block of JSON per call"),
        "{system}"
    );
    assert!(
        system.ends_with(
            r#"<tool_call>{"name":"get_weather","arguments":{"city":string}}</tool_call>"#
        ),
        "{system}"
    );
    let past = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["content"]
        .clone();
    assert_eq!(
        past,
        r#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#
    );
}

#[tokio::test]
async fn openai_clients_get_parallel_calls_from_a_python_list() {
    let reply = r#"[get_weather(city="Paris"), get_weather(city="Lyon")]"#;
    let live = scripted(vec![reply.into()], TEXT_MODE).await;
    let body = json!({"model": MODEL, "tools": [weather_tool()], "messages": [
        {"role": "user", "content": "Weather in Paris and in Lyon?"}]});
    let r = client()
        .post(live.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let calls = v["choices"][0]["message"]["tool_calls"].as_array().unwrap();
    let cities: Vec<Value> = calls
        .iter()
        .map(|c| {
            serde_json::from_str::<Value>(c["function"]["arguments"].as_str().unwrap()).unwrap()
                    ["city"]
                    .clone()
        })
        .collect();
    assert_eq!(cities, [json!("Paris"), json!("Lyon")]);
}

#[tokio::test]
async fn a_structured_answer_or_thinking_keeps_grammar_mode() {
    let structured = r#"{"response":{"answer":"sunny"}}"#;
    let thought = r#"{"reasoning":"Look it up.","answer":{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}}"#;
    let live = scripted(vec![structured.into(), thought.into()], TEXT_MODE).await;
    let body = json!({"model": MODEL, "stream": false, "tools": [weather_tool()], "messages": ask(),
        "format": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}});
    let r = client()
        .post(live.url("/api/chat"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], r#"{"answer":"sunny"}"#);
    assert!(sent(&live)["format"]["anyOf"].is_array());

    let body = json!({"model": MODEL, "stream": false, "tools": [weather_tool()], "messages": ask(), "think": true});
    let r = client()
        .post(live.url("/api/chat"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["thinking"], "Look it up.");
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"})
    );
    assert!(sent(&live)["format"].is_object());
}

#[tokio::test]
async fn a_repeated_call_is_asked_again_in_grammar_mode_for_an_answer() {
    let answer = "It is 18 °C with light rain in Paris.";
    let live = scripted(
        vec![
            r#"[get_weather(city="Paris")]"#.into(),
            answer_reply(answer),
        ],
        TEXT_MODE,
    )
    .await;
    let r = chat(&live, false, json!([weather_tool()]), answered_weather()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), Some("loop"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], answer, "{v}");
    assert!(v["message"].get("tool_calls").is_none(), "{v}");
    // The re-ask holds the model to the envelope's answer branch.
    assert_eq!(live.fake.requests("/api/chat"), 2);
    let body = sent(&live);
    assert_eq!(
        body["format"]["properties"]["response"]["type"], "string",
        "{body}"
    );
    assert_eq!(body["model"], MODEL);
}
