//! Structured output end to end against the fake Ollama: `format`
//! normalization and rejection, schema sanitizing, validation, repair,
//! retries with feedback, degraded retries after the upstream's grammar
//! converter rejects a schema, streaming (buffered and pass), thinking
//! emulation, and OpenAI's `response_format`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    formats::{
        assert_grammar_safe, chat, generate, hostile_schema, person, scripted, streamed_content,
        with_policy,
    },
    header, ndjson, pair, post, start_with,
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// The `data:` payloads of an SSE body, without `[DONE]`.
fn sse(text: &str) -> Vec<Value> {
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------
// Normalizing

#[tokio::test]
async fn json_mode_spellings_become_json() {
    let (fake, augur) = pair().await;
    for format in [
        json!({"type": "json"}),
        json!({"type": "json_object"}),
        json!("JSON"),
        json!(" json "),
        json!({}),
    ] {
        for path in ["/api/chat", "/api/generate"] {
            let body = if path == "/api/chat" {
                chat("llama3.2", format.clone(), false)
            } else {
                generate("llama3.2", format.clone(), false)
            };
            let r = post(&augur, path, &body).await;
            assert_eq!(r.status(), 200, "{format} on {path}");
            let v: Value = r.json().await.unwrap();
            let sent = fake.last_json(path).unwrap();
            assert_eq!(sent["format"], "json", "{format} on {path}");
            let text = v
                .pointer("/message/content")
                .or(v.get("response"))
                .and_then(Value::as_str)
                .unwrap();
            assert!(serde_json::from_str::<Value>(text).unwrap().is_object());
        }
    }
}

#[tokio::test]
async fn a_schema_in_a_string_or_an_openai_wrapper_is_the_schema() {
    let (fake, augur) = pair().await;
    for format in [
        json!(person().to_string()),
        json!({"type": "json_schema", "json_schema": {"name": "person", "strict": true, "schema": person()}}),
    ] {
        let r = post(
            &augur,
            "/api/chat",
            &chat("llama3.2", format.clone(), false),
        )
        .await;
        assert_eq!(r.status(), 200, "{format}");
        let v: Value = r.json().await.unwrap();
        let sent = fake.last_json("/api/chat").unwrap();
        assert_eq!(sent["format"]["type"], "object", "{format}");
        assert_eq!(sent["format"]["properties"], person()["properties"]);
        assert_eq!(sent["format"]["required"], json!(["name", "age"]));
        let content: Value =
            serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
        assert_eq!(content, json!({"name": "x", "age": 1}));
    }
}

#[tokio::test]
async fn null_and_empty_formats_are_unset() {
    let (fake, augur) = pair().await;
    for format in [json!(null), json!("")] {
        let r = post(
            &augur,
            "/api/chat",
            &chat("llama3.2", format.clone(), false),
        )
        .await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["message"]["content"],
            fake_ollama::SENTENCE.concat(),
            "{format}"
        );
        let sent = fake.last_json("/api/chat").unwrap();
        assert!(
            sent.get("format").is_none_or(Value::is_null),
            "{format} reached the upstream as {}",
            sent["format"]
        );
    }
}

#[tokio::test]
async fn unfixable_formats_are_answered_400_before_the_upstream() {
    let (fake, augur) = pair().await;
    let cases = [
        (json!(42), "42"),
        (json!("yaml"), "yaml"),
        (json!(["json"]), "[\"json\"]"),
        (json!(true), "true"),
        (
            json!({"type": "object", "properties": {"a": {"type": "strnig"}}}),
            "strnig",
        ),
    ];
    for (format, named) in cases {
        for stream in [false, true] {
            for path in ["/api/chat", "/api/generate"] {
                let body = if path == "/api/chat" {
                    chat("llama3.2", format.clone(), stream)
                } else {
                    generate("llama3.2", format.clone(), stream)
                };
                let r = post(&augur, path, &body).await;
                assert_eq!(r.status(), 400, "{format} on {path}");
                let v: Value = r.json().await.unwrap();
                let error = v["error"].as_str().unwrap();
                assert!(error.contains("format"), "{error}");
                assert!(error.contains(named), "{error} should name {named}");
            }
        }
    }
    assert_eq!(fake.requests("/api/chat"), 0);
    assert_eq!(fake.requests("/api/generate"), 0);
}

// ---------------------------------------------------------------------------
// Sanitizing

#[tokio::test]
async fn converter_rejected_constructs_never_reach_the_upstream() {
    let (fake, augur) = pair().await;
    for path in ["/api/chat", "/api/generate"] {
        let body = if path == "/api/chat" {
            chat("llama3.2", hostile_schema(), false)
        } else {
            generate("llama3.2", hostile_schema(), false)
        };
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200, "{path}");
        let sent = fake.last_json(path).unwrap()["format"].clone();
        assert_grammar_safe(&sent);
        assert_eq!(
            sent.pointer("/properties/tag/pattern"),
            Some(&json!("^.*(?:[a-z]+).*$")),
            "{sent}"
        );
        let v: Value = r.json().await.unwrap();
        let text = v
            .pointer("/message/content")
            .or(v.get("response"))
            .and_then(Value::as_str)
            .unwrap();
        let answer: Value = serde_json::from_str(text).unwrap();
        assert!(jsonschema::is_valid(&hostile_schema(), &answer), "{answer}");
    }
}

#[tokio::test]
async fn answers_are_validated_against_the_original_schema() {
    // Grammar-wise the sanitized schema allows any tag; the original wants
    // letters. A digits-only tag is caught and reported at its pointer.
    let bad = r#"{"tag":"123","note":null,"extra":1}"#;
    let (_fake, augur) = scripted("scripted", &[bad, bad]).await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("scripted", hostile_schema(), false),
    )
    .await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("/tag"), "{error}");
}

// ---------------------------------------------------------------------------
// Repair

#[tokio::test]
async fn fences_and_trailing_commas_are_repaired() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("bad-json", person(), false)).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("code_fence"), "{repaired}");
    assert!(repaired.contains("trailing_comma"), "{repaired}");
    assert_eq!(header(&r, "x-augur-attempts"), None);
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(v["done"], true);
    assert_eq!(fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn prose_and_string_scalars_are_repaired_on_generate() {
    let reply = r#"Sure! Here it is: {"name": "Ann", "age": "42"} Hope that helps."#;
    let (fake, augur) = scripted("scripted", &[reply]).await;
    let r = post(
        &augur,
        "/api/generate",
        &generate("scripted", person(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("surrounding_text"), "{repaired}");
    assert!(repaired.contains("coerced_types"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["response"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "Ann", "age": 42}));
    assert_eq!(fake.requests("/api/generate"), 1);
}

#[tokio::test]
async fn truncated_json_is_closed() {
    let (fake, augur) = pair().await;
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    let r = post(&augur, "/api/chat", &chat("truncated", schema, false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), Some("closed_truncated"));
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert!(content["a"].is_string(), "{content}");
    assert_eq!(fake.requests("/api/chat"), 1);
}

// ---------------------------------------------------------------------------
// Retries

#[tokio::test]
async fn an_invalid_answer_is_retried_with_its_violations() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("invalid-then-valid", person(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(fake.requests("/api/chat"), 2);
    let sent = fake.last_json("/api/chat").unwrap();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], r#"{"age":1}"#);
    assert_eq!(messages[2]["role"], "user");
    let feedback = messages[2]["content"].as_str().unwrap();
    assert!(feedback.contains("/name"), "{feedback}");

    // /api/generate: the feedback goes into the prompt.
    let r = post(
        &augur,
        "/api/generate",
        &generate("invalid-then-valid", person(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let prompt = fake.last_json("/api/generate").unwrap()["prompt"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        prompt.starts_with("Who?") && prompt.contains("/name"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_cut_off_answer_is_retried_with_more_tokens() {
    // `truncated` cuts `{"name":"x","age":1}` to `{"name":"x","`: closing it
    // still misses "age", so augur asks again with a larger num_predict.
    let (fake, augur) = pair().await;
    let mut body = chat("truncated", person(), false);
    body["options"] = json!({"num_predict": 100, "temperature": 0});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 422);
    let error = r.json::<Value>().await.unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("after 2 attempts") && error.contains("/age"),
        "{error}"
    );
    assert_eq!(fake.requests("/api/chat"), 2);
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(
        sent["options"],
        json!({"num_predict": 200, "temperature": 0})
    );
    let feedback = sent["messages"][2]["content"].as_str().unwrap();
    assert!(feedback.contains("cut off"), "{feedback}");

    // Without a client limit, the default is raised.
    let r = post(
        &augur,
        "/api/generate",
        &generate("truncated", person(), false),
    )
    .await;
    assert_eq!(r.status(), 422);
    let sent = fake.last_json("/api/generate").unwrap();
    assert_eq!(sent["options"]["num_predict"], 1024);
}

#[tokio::test]
async fn still_invalid_after_the_last_attempt_is_422_with_pointers() {
    let bad = r#"{"name": {"first": "Ann"}}"#;
    let (fake, augur) = scripted("scripted", &[bad, bad, bad, bad]).await;
    for stream in [false, true] {
        let r = post(&augur, "/api/chat", &chat("scripted", person(), stream)).await;
        assert_eq!(r.status(), 422, "stream {stream}");
        let v: Value = r.json().await.unwrap();
        let error = v["error"].as_str().unwrap();
        assert!(error.contains("after 2 attempts"), "{error}");
        assert!(error.contains("/name"), "{error}");
        assert!(error.contains("/age"), "{error}");
    }
    assert_eq!(fake.requests("/api/chat"), 4);
}

#[tokio::test]
async fn on_failure_pass_returns_the_best_attempt_marked_invalid() {
    let bad = r#"{"name": "Ann"}"#;
    let fake = FakeOllama::builder()
        .script("scripted", vec![bad.to_string(); 4])
        .start()
        .await;
    let augur = with_policy(&fake, "defaults:\n  validate: {on_failure: pass}\n").await;
    let r = post(&augur, "/api/chat", &chat("scripted", person(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], bad);

    let r = post(
        &augur,
        "/api/generate",
        &generate("scripted", person(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(streamed_content(&chunks), bad);
    assert_eq!(chunks.last().unwrap()["done"], true);
}

// ---------------------------------------------------------------------------
// Degraded retries

/// A schema the sanitizer keeps as is, which `reject-schema` refuses, and
/// whose constraints the fake's JSON-mode answer still satisfies.
fn answer_schema() -> Value {
    json!({"type": "object", "properties": {
        "answer": {"type": "string", "pattern": "^.*sky.*$", "minLength": 3}
    }, "required": ["answer"]})
}

#[tokio::test]
async fn a_rejected_schema_is_degraded_then_json() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("reject-schema", answer_schema(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    // The schema, the schema without value constraints, then "json".
    assert_eq!(fake.requests("/api/chat"), 3);
    assert_eq!(header(&r, "x-augur-attempts"), Some("3"));
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(sent["format"], "json");
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert!(
        jsonschema::is_valid(&answer_schema(), &content),
        "{content}"
    );
}

#[tokio::test]
async fn a_deep_rejected_schema_reaches_json_mode() {
    // Three levels: constraints dropped, then structure cut, then "json".
    let schema = json!({"type": "object", "properties": {
        "answer": {"type": "string", "minLength": 3},
        "meta": {"type": "object", "properties": {
            "inner": {"type": "object", "properties": {"deep": {"type": "string"}}}
        }}
    }, "required": ["answer"]});
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("reject-schema", schema, false)).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    assert_eq!(fake.last_json("/api/chat").unwrap()["format"], "json");
}

#[tokio::test]
async fn degraded_retries_also_serve_streams() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let r = post(
        &augur,
        "/api/generate",
        &generate("reject-schema", answer_schema(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let content: Value = serde_json::from_str(&streamed_content(&chunks)).unwrap();
    assert!(jsonschema::is_valid(&answer_schema(), &content));
    assert_eq!(chunks.last().unwrap()["done"], true);

    // stream: pass too: the rejection comes before any byte was sent.
    let augur = with_policy(&fake, "defaults:\n  validate: {stream: pass}\n").await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("reject-schema", answer_schema(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let last = chunks.last().unwrap();
    assert_eq!(last["done"], true, "{chunks:?}");
    assert_eq!(last["augur_validation"], "valid", "{last}");
    assert_eq!(fake.last_json("/api/chat").unwrap()["format"], "json");
}

/// An upstream with the older wording: 500 "invalid JSON schema in format"
/// for any schema, a JSON answer otherwise. Returns its URL and the formats
/// it was sent.
async fn old_converter() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::{Json, http::StatusCode, routing::post};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/api/chat",
        post(move |Json(body): Json<Value>| async move {
            log.lock().unwrap().push(body["format"].clone());
            if body["format"].is_object() {
                let e = json!({"error": "invalid JSON schema in format"});
                return (StatusCode::INTERNAL_SERVER_ERROR, Json(e));
            }
            let answer = json!({"model": body["model"], "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": r#"{"answer":"The sky."}"#},
                "done": true, "done_reason": "stop"});
            (StatusCode::OK, Json(answer))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn the_older_rejection_wording_degrades_too() {
    let (url, seen) = old_converter().await;
    let augur = start_with(&url, |_| {}).await;
    let r = post(&augur, "/api/chat", &chat("any", answer_schema(), false)).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], r#"{"answer":"The sky."}"#);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].is_object() && seen[1].is_object(), "{seen:?}");
    assert!(seen[1].pointer("/properties/answer/pattern").is_none());
    assert_eq!(seen[2], "json");
}

#[tokio::test]
async fn degrade_off_returns_the_upstreams_error() {
    let fake = FakeOllama::builder().start().await;
    let augur = with_policy(&fake, "defaults:\n  validate: {degrade: false}\n").await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("reject-schema", answer_schema(), false),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("JSON schema conversion failed"), "{error}");
    assert_eq!(fake.requests("/api/chat"), 1);
}

// ---------------------------------------------------------------------------
// Streaming

#[tokio::test]
async fn a_schema_stream_is_buffered_by_default() {
    let (fake, augur) = pair().await;
    for path in ["/api/chat", "/api/generate"] {
        let body = if path == "/api/chat" {
            chat("bad-json", person(), true)
        } else {
            generate("bad-json", person(), true)
        };
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "content-type"), Some("application/x-ndjson"));
        assert!(header(&r, "x-augur-repaired").is_some(), "{path}");
        let chunks = ndjson(&r.text().await.unwrap());
        assert_eq!(chunks.len(), 2, "{path}: {chunks:?}");
        assert_eq!(chunks[0]["done"], false);
        assert_eq!(chunks[1]["done"], true);
        assert_eq!(chunks[1]["done_reason"], "stop");
        let content: Value = serde_json::from_str(&streamed_content(&chunks)).unwrap();
        assert_eq!(content, json!({"name": "x", "age": 1}));
        assert_eq!(fake.last_json(path).unwrap()["stream"], false);
    }
}

#[tokio::test]
async fn a_buffered_stream_is_retried_before_anything_is_sent() {
    let (_fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("invalid-then-valid", person(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let chunks = ndjson(&r.text().await.unwrap());
    let content: Value = serde_json::from_str(&streamed_content(&chunks)).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
}

#[tokio::test]
async fn stream_pass_reports_the_outcome_in_the_done_chunk() {
    let bad = r#"{"name": "Ann"}"#;
    let fake = FakeOllama::builder()
        .script("scripted", vec![bad.to_string()])
        .start()
        .await;
    let augur = with_policy(&fake, "defaults:\n  validate: {stream: pass}\n").await;

    let r = post(&augur, "/api/chat", &chat("llama3.2", person(), true)).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.len() > 2, "streamed as it came: {chunks:?}");
    assert_eq!(fake.last_json("/api/chat").unwrap()["stream"], true);
    let last = chunks.last().unwrap();
    assert_eq!(last["augur_validation"], "valid");
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.get("augur_validation").is_none())
    );

    let r = post(
        &augur,
        "/api/generate",
        &generate("scripted", person(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(streamed_content(&chunks), bad);
    let last = chunks.last().unwrap();
    assert_eq!(last["augur_validation"], "invalid");
    let violations = last["augur_violations"].as_str().unwrap();
    assert!(violations.contains("/age"), "{violations}");
}

#[tokio::test]
async fn json_mode_streams_pass_by_default() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("llama3.2", json!("JSON"), true)).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.len() > 2, "{chunks:?}");
    assert_eq!(chunks.last().unwrap()["augur_validation"], "valid");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(
        (sent["format"].clone(), sent["stream"].clone()),
        (json!("json"), json!(true))
    );
}

// ---------------------------------------------------------------------------
// Thinking emulation

const THOUGHT: &str = r#"{"reasoning": "Light scatters.", "answer": "Blue."}"#;

fn assert_think_format(sent: &Value) {
    assert!(sent.get("think").is_none(), "{sent}");
    let keys: Vec<&String> = sent["format"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["reasoning", "answer"], "reasoning first");
    assert_eq!(sent["format"]["required"], json!(["reasoning", "answer"]));
}

#[tokio::test]
async fn think_without_the_capability_is_emulated() {
    let (fake, augur) = scripted("gemma3", &[THOUGHT, THOUGHT]).await;
    let mut body = chat("gemma3", Value::Null, false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-emulated"), Some("thinking"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["thinking"], "Light scatters.");
    assert_eq!(v["message"]["content"], "Blue.");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_think_format(&sent);
    assert_eq!(
        sent["format"]["properties"]["answer"],
        json!({"type": "string"})
    );

    let mut body = generate("gemma3", Value::Null, false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/generate", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["thinking"], "Light scatters.");
    assert_eq!(v["response"], "Blue.");
    assert_think_format(&fake.last_json("/api/generate").unwrap());
}

#[tokio::test]
async fn emulated_thinking_with_a_schema_answers_the_schema() {
    let (fake, augur) = pair().await;
    let mut body = generate("gemma3", hostile_schema(), false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/generate", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(v["thinking"].is_string(), "{v}");
    let answer: Value = serde_json::from_str(v["response"].as_str().unwrap()).unwrap();
    assert!(jsonschema::is_valid(&hostile_schema(), &answer), "{answer}");
    let sent = fake.last_json("/api/generate").unwrap();
    assert_think_format(&sent);
    assert_grammar_safe(&sent["format"]);
    assert_eq!(sent["format"]["properties"]["answer"]["type"], "object");
}

#[tokio::test]
async fn emulated_thinking_streams_as_it_is_produced() {
    let (_fake, augur) = scripted("gemma3", &[THOUGHT, THOUGHT]).await;
    for path in ["/api/chat", "/api/generate"] {
        let mut body = if path == "/api/chat" {
            chat("gemma3", Value::Null, true)
        } else {
            generate("gemma3", Value::Null, true)
        };
        body["think"] = json!(true);
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200);
        let chunks = ndjson(&r.text().await.unwrap());
        let field = |c: &Value, k: &str| {
            c.get("message")
                .and_then(|m| m.get(k))
                .or_else(|| c.get(if k == "content" { "response" } else { k }))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (last, deltas) = chunks.split_last().unwrap();
        let thinking: Vec<String> = deltas.iter().map(|c| field(c, "thinking")).collect();
        let content: Vec<String> = deltas.iter().map(|c| field(c, "content")).collect();
        assert_eq!(thinking.concat(), "Light scatters.", "{path}: {chunks:?}");
        assert_eq!(content.concat(), "Blue.", "{path}");
        // The thinking arrives in pieces, as the model writes it, and all
        // of it before the answer.
        let first_content = content.iter().position(|c| !c.is_empty()).unwrap();
        assert!(
            thinking[..first_content]
                .iter()
                .filter(|t| !t.is_empty())
                .count()
                > 1
        );
        assert!(thinking[first_content..].iter().all(String::is_empty));
        assert_eq!(last["done"], true);
        assert_eq!(field(last, "content"), "");
        assert_eq!(field(last, "thinking"), "");
    }
}

#[tokio::test]
async fn a_streamed_thinking_answer_with_a_schema_is_validated_before_it_is_sent() {
    let bad = r#"{"reasoning": "Counting.", "answer": {"name": "x"}}"#;
    let good = r#"{"reasoning": "Counting again.", "answer": {"name": "x", "age": 3}}"#;
    let (fake, augur) = scripted("gemma3", &[bad, good]).await;
    let mut body = chat("gemma3", person(), true);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let thinking: String = chunks
        .iter()
        .filter_map(|c| c["message"]["thinking"].as_str())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(thinking, "Counting.", "the first thinking only: {chunks:?}");
    let answer: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(answer, json!({"name": "x", "age": 3}));
    assert_eq!(fake.requests("/api/chat"), 2, "retried with feedback");
    assert_eq!(chunks.last().unwrap()["done"], true);
}

// ---------------------------------------------------------------------------
// OpenAI response_format

fn openai(model: &str, response_format: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "response_format": response_format,
        "messages": [{"role": "user", "content": "Who?"}]})
}

fn json_schema(schema: Value) -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
}

#[tokio::test]
async fn response_format_is_repaired_and_answered_in_openais_shape() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("bad-json", json_schema(person()), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(
        header(&r, "x-augur-repaired")
            .unwrap()
            .contains("code_fence")
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let content: Value =
        serde_json::from_str(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(fake.requests("/v1/chat/completions"), 0);
    assert_eq!(
        fake.last_json("/api/chat").unwrap()["format"]["type"],
        "object"
    );

    // Retried too.
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("invalid-then-valid", json_schema(person()), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
}

#[tokio::test]
async fn response_format_streams_valid_json() {
    let (_fake, augur) = pair().await;
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("bad-json", json_schema(person()), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), Some("text/event-stream"));
    let events = sse(&r.text().await.unwrap());
    let content: String = events
        .iter()
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect();
    let content: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(
        events.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn response_format_errors_use_openais_shape() {
    let bad = r#"{"name": 7}"#;
    let (fake, augur) = scripted("scripted", &[bad, bad]).await;
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("scripted", json_schema(person()), false),
    )
    .await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("/age"), "{message}");
    assert!(v["error"]["type"].is_string(), "{v}");

    let before = fake.requests("/api/chat");
    for rf in [
        json!({"type": "yaml"}),
        json_schema(json!({"type": "object", "properties": {"a": {"type": "strnig"}}})),
    ] {
        let r = post(
            &augur,
            "/v1/chat/completions",
            &openai("scripted", rf.clone(), false),
        )
        .await;
        assert_eq!(r.status(), 400, "{rf}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
        assert!(v["error"]["message"].is_string(), "{v}");
    }
    assert_eq!(fake.requests("/api/chat"), before);
    assert_eq!(fake.requests("/v1/chat/completions"), 0);
}
