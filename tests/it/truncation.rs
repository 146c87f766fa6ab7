//! Answers cut off by the token limit, end to end against the fake Ollama:
//! a tool call whose array or string argument runs away is retried with
//! that part bounded in the grammar (and answered, not refused), complete
//! leading calls of a cut list are kept, and structured outputs are
//! bounded the same way. An answer Ollama ends for repeating one token
//! (no done chunk) is a cut like the token limit's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{formats::scripted, header, ndjson, pair, post};
use serde_json::{Value, json};

fn tag_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "tag", "description": "Tag a photo",
        "parameters": {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}}
        }, "required": ["tags"]}
    }})
}

fn note_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "note", "description": "Write a note",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
            "required": ["text"]}
    }})
}

fn request(model: &str, tool: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "tools": [tool],
        "messages": [{"role": "user", "content": "Tag this photo of a beach and write a note about it."}],
        "options": {"num_predict": 200}})
}

/// The arguments schema of the first tool in an envelope sent upstream.
fn arguments_in(format: &Value) -> Value {
    format
        .pointer("/anyOf/0/properties/tool_calls/items/properties/arguments")
        .cloned()
        .unwrap_or_else(|| panic!("no arguments in {format}"))
}

#[tokio::test]
async fn a_runaway_array_argument_is_retried_with_a_bound() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &request("loop-array", tag_tool(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["done_reason"], "stop");
    let call = &v["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "tag");
    let tags = call["arguments"]["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 64, "the bound, and the answer fits");

    // The retry bounded the runaway array in the grammar, and only there.
    assert_eq!(fake.requests("/api/chat"), 2);
    let sent = fake.last_json("/api/chat").unwrap();
    let arguments = arguments_in(&sent["format"]);
    assert_eq!(
        arguments["properties"]["tags"]["maxItems"], 64,
        "{arguments}"
    );
    assert_eq!(
        sent["format"]["anyOf"][0]["properties"]["tool_calls"]["maxItems"], 4,
        "the envelope's own bound is unchanged"
    );
    // The client's limit is kept: the bound makes the answer fit.
    assert_eq!(sent["options"]["num_predict"], 200);
    let messages = sent["messages"].as_array().unwrap();
    let excerpt = &messages[messages.len() - 2];
    assert_eq!(excerpt["role"], "assistant");
    assert!(excerpt["content"].as_str().unwrap().len() <= 1024);
    let feedback = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        feedback.contains("/tool_calls/0/arguments/tags kept growing")
            && feedback.contains("at most 64 items"),
        "{feedback}"
    );
}

#[tokio::test]
async fn a_streamed_runaway_is_retried_whole_and_streamed() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &request("loop-array", tag_tool(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let calls = common::tool_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    let tags = calls[0]["function"]["arguments"]["tags"]
        .as_array()
        .unwrap();
    assert_eq!(tags.len(), 64);
    let done = chunks.last().unwrap();
    assert_eq!(
        (&done["done"], &done["done_reason"]),
        (&json!(true), &json!("stop"))
    );
    assert!(chunks.iter().all(|c| c.get("error").is_none()));
    assert_eq!(
        fake.requests("/api/chat"),
        2,
        "the streamed attempt, then the bounded one"
    );
}

#[tokio::test]
async fn a_runaway_string_argument_is_retried_with_a_max_length() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &request("loop-string", note_tool(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let text = v["message"]["tool_calls"][0]["function"]["arguments"]["text"]
        .as_str()
        .unwrap();
    let sent = fake.last_json("/api/chat").unwrap();
    let bound = arguments_in(&sent["format"])["properties"]["text"]["maxLength"]
        .as_u64()
        .unwrap();
    assert!((100..=512).contains(&bound), "{bound}");
    assert_eq!(text.chars().count() as u64, bound);
    assert!(text.starts_with("la la"));
}

#[tokio::test]
async fn complete_leading_calls_of_a_cut_list_answer_the_request() {
    let tags = vec![r#""sand""#; 300].join(",");
    let reply = format!(
        r#"{{"tool_calls":[{{"name":"note","arguments":{{"text":"beach"}}}},{{"name":"tag","arguments":{{"tags":[{tags}]}}}}]}}"#
    );
    let (fake, augur) = scripted("scripted", &[&reply]).await;
    let body = json!({"model": "scripted", "stream": false, "tools": [note_tool(), tag_tool()],
        "messages": [{"role": "user", "content": "Note and tag it."}],
        "options": {"num_predict": 150}});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), Some("closed_truncated"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["done_reason"], "stop");
    let calls = v["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["function"]["arguments"], json!({"text": "beach"}));
    assert_eq!(fake.requests("/api/chat"), 1, "no retry");
}

#[tokio::test]
async fn structured_outputs_are_bounded_the_same_way() {
    let (fake, augur) = pair().await;
    // Closing the cut answer would still miss "total": no repair helps.
    let schema = json!({"type": "object", "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}},
        "total": {"type": "integer"}
    }, "required": ["ids", "total"]});
    for (path, body) in [
        (
            "/api/chat",
            json!({"model": "loop-array", "stream": false, "format": schema,
                "messages": [{"role": "user", "content": "ids?"}], "options": {"num_predict": 100}}),
        ),
        (
            "/api/generate",
            json!({"model": "loop-array", "stream": false, "format": schema,
                "prompt": "ids?", "options": {"num_predict": 100}}),
        ),
    ] {
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
        let v: Value = r.json().await.unwrap();
        let text = v["message"]["content"]
            .as_str()
            .or(v["response"].as_str())
            .unwrap();
        let answer: Value = serde_json::from_str(text).unwrap();
        let sent = fake.last_json(path).unwrap();
        let bound = &sent["format"]["properties"]["ids"]["maxItems"];
        assert!(
            bound.as_u64().is_some_and(|b| b > 1),
            "{path}: {}",
            sent["format"]
        );
        assert_eq!(
            answer["ids"].as_array().unwrap().len() as u64,
            bound.as_u64().unwrap()
        );
        assert_eq!(sent["options"]["num_predict"], 100);
    }
}

#[tokio::test]
async fn an_answer_ollama_ends_for_repeating_a_token_is_retried_with_a_bound() {
    for stream in [false, true] {
        let (fake, augur) = pair().await;
        let r = post(
            &augur,
            "/api/chat",
            &request("loop-repeat", note_tool(), stream),
        )
        .await;
        assert_eq!(r.status(), 200, "stream {stream}");
        let body = r.text().await.unwrap();
        let chunks = ndjson(&body);
        let calls = common::tool_calls(&chunks);
        assert_eq!(calls.len(), 1, "stream {stream}: {body}");
        let text = calls[0]["function"]["arguments"]["text"].as_str().unwrap();
        assert_eq!(chunks.last().unwrap()["done"], true, "{body}");

        // The first answer ended without a done chunk, inside the string:
        // the retry bounded that string in the grammar.
        assert_eq!(fake.requests("/api/chat"), 2, "stream {stream}");
        let sent = fake.last_json("/api/chat").unwrap();
        let bound = arguments_in(&sent["format"])["properties"]["text"]["maxLength"]
            .as_u64()
            .unwrap();
        assert!((1..=64).contains(&bound), "{bound}");
        assert_eq!(text, "0".repeat(bound as usize));
        let feedback = sent["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(feedback.contains("cut off"), "{feedback}");
    }
}
