//! `format` normalization end to end against the fake Ollama: JSON-mode
//! spellings become `"json"`, a schema given as a string or in OpenAI's
//! wrapper is the schema, null and empty formats are unset, and formats
//! that cannot be fixed are answered 400 before the upstream.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{chat, generate, person},
    pair, post,
};
use serde_json::{Value, json};

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
