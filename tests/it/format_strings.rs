//! String formats and schema validity end to end against the fake Ollama:
//! formats the grammar converter has no rule for reach it as patterns, and
//! a schema that is not JSON Schema is a 400 before any model call, in a
//! `format` or in a tool's parameters.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{assert_grammar_safe, chat, scripted},
    pair, post,
};
use serde_json::{Value, json};

fn contact() -> Value {
    json!({"type": "object", "required": ["email", "ip", "day"], "properties": {
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "ip": {"type": "string", "format": "ipv4"},
        "day": {"type": "string", "format": "date"},
        "code": {"type": "string", "format": "email", "pattern": "^[a-z]+@x[.]io$"}}})
}

#[tokio::test]
async fn formats_without_a_converter_rule_are_sent_as_patterns() {
    let good = r#"{"email":"ann@example.org","site":"https://example.org/","ip":"10.0.0.1","day":"2026-11-23"}"#;
    let (fake, augur) = scripted("scripted", &[good]).await;
    let r = post(&augur, "/api/chat", &chat("scripted", contact(), false)).await;
    assert_eq!(r.status(), 200);
    let sent = fake.last_json("/api/chat").unwrap()["format"].clone();
    assert_grammar_safe(&sent);
    let props = &sent["properties"];
    for key in ["site", "ip"] {
        assert!(props[key].get("format").is_none(), "{sent}");
        let p = props[key]["pattern"].as_str().unwrap();
        assert!(p.starts_with('^') && p.ends_with('$'), "{p}");
    }
    assert!(props["site"]["pattern"].as_str().unwrap().contains(':'));
    // A format no bounded pattern can hold whole (quoted e-mail local
    // parts) is not narrowed: the answer is still validated against it.
    assert_eq!(props["email"], json!({"type": "string"}), "{sent}");
    // The converter's own rule stays; a client's own pattern wins.
    assert_eq!(props["day"]["format"], "date");
    assert_eq!(props["code"]["pattern"], "^[a-z]+@x[.]io$");
}

#[tokio::test]
async fn a_value_outside_the_format_is_still_refused() {
    let bad = r#"{"email":"<email>","ip":"10.0.0.1","day":"2026-11-23"}"#;
    let (fake, augur) = scripted("scripted", &[bad, bad, bad, bad]).await;
    let r = post(&augur, "/api/chat", &chat("scripted", contact(), false)).await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("/email"), "{v}");
    assert_eq!(fake.requests("/api/chat"), 2);
}

#[tokio::test]
async fn an_invalid_format_schema_is_400_before_any_model_call() {
    let (fake, augur) = pair().await;
    for (schema, at) in [
        (json!({"type": "object", "properties": "x"}), "/properties"),
        (json!({"type": "object", "required": "a"}), "/required"),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}}),
            "/properties/a/minLength",
        ),
    ] {
        let r = post(
            &augur,
            "/api/chat",
            &chat("llama3.2", schema.clone(), false),
        )
        .await;
        assert_eq!(r.status(), 400, "{schema}");
        let error = r.json::<Value>().await.unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            error.contains("format schema invalid") && error.contains(at),
            "{error}"
        );
    }
    assert_eq!(fake.total_requests(), 0);
}

fn tool(name: &str, parameters: Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": "d", "parameters": parameters}})
}

#[tokio::test]
async fn an_invalid_tool_schema_is_400_naming_the_tool() {
    let (fake, augur) = pair().await;
    let good = tool(
        "ok",
        json!({"type": "object", "properties": {"a": {"type": "str"}}}),
    );
    let bad = tool(
        "get_weather",
        json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": "x"}}}),
    );
    for (path, body) in [
        (
            "/api/chat",
            json!({"model": "gemma3", "stream": false, "tools": [good.clone(), bad.clone()],
            "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "gemma3", "tools": [good.clone(), bad.clone()],
            "messages": [{"role": "user", "content": "hi"}]}),
        ),
    ] {
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 400, "{path}");
        let text = r.text().await.unwrap();
        assert!(
            text.contains(r#"tool \"get_weather\" parameters schema invalid"#),
            "{text}"
        );
        assert!(text.contains("/properties/city/maxLength"), "{text}");
    }
    // Only the capability lookup reached the upstream, no generation.
    assert_eq!(fake.requests("/api/chat"), 0);
    assert_eq!(fake.requests("/v1/chat/completions"), 0);
    // Python-style type names are a deviation augur fixes, not an error.
    let body = json!({"model": "tool-json", "stream": false, "tools": [good],
        "messages": [{"role": "user", "content": r#"{"tool_call":{"name":"ok","arguments":{"a":"x"}}}"#}]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
}
