//! Structured-output requests and checks shared by the format tests: the
//! person schema, chat and generate bodies with a `format`, the answer the
//! fake gives it, the content of a streamed answer, augur with one policy
//! file or in front of a scripted model, and the schema constructs
//! llama.cpp's grammar converter rejects.

use std::time::Duration;

use augur::config::Config;
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use super::{Augur, post, start_config, start_with, write_policy};

/// `{"name": string, "age": integer}`, both required.
pub fn person() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"}
    }, "required": ["name", "age"]})
}

pub fn chat(model: &str, format: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "format": format,
        "messages": [{"role": "user", "content": "Who?"}]})
}

pub fn generate(model: &str, format: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "format": format, "prompt": "Who?"})
}

/// `person()` asked of `model` on `path` (`/api/chat` or `/api/generate`).
pub async fn ask_person(augur: &Augur, path: &str, model: &str, stream: bool) -> reqwest::Response {
    let body = if path == "/api/generate" {
        generate(model, person(), stream)
    } else {
        chat(model, person(), stream)
    };
    post(augur, path, &body).await
}

/// `content` is the answer the fake's models give `person()` (its smallest
/// instance: strings "x", numbers 1), once valid.
pub fn assert_person_answer(content: &str) {
    let answer: Value = serde_json::from_str(content).unwrap_or_else(|e| panic!("{e}: {content}"));
    assert_eq!(answer, json!({"name": "x", "age": 1}));
}

/// Content of a streamed chat or generate answer, and its chunks.
pub fn streamed_content(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| {
            c.pointer("/message/content")
                .or(c.get("response"))
                .and_then(Value::as_str)
                .unwrap_or_default()
        })
        .collect()
}

/// augur in front of `fake` with one policy file.
pub async fn with_policy(fake: &FakeOllama, yaml: &str) -> Augur {
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    write_policy(policies.path(), "policy.yaml", yaml);
    let policy = augur::policy::load_dir(policies.path(), schemas.path()).unwrap();
    let config = Config {
        upstreams: super::upstreams(&fake.url()),
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    start_config(config, policy).await
}

/// A fake Ollama whose `model` answers `replies` in turn, and augur in
/// front of it.
pub async fn scripted(model: &str, replies: &[&str]) -> (FakeOllama, Augur) {
    let fake = scripted_fake(model, replies).await;
    let augur = start_with(&fake.url(), |_| {}).await;
    (fake, augur)
}

/// [`scripted`], with augur under one policy file.
pub async fn scripted_with_policy(
    model: &str,
    replies: &[&str],
    yaml: &str,
) -> (FakeOllama, Augur) {
    let fake = scripted_fake(model, replies).await;
    let augur = with_policy(&fake, yaml).await;
    (fake, augur)
}

async fn scripted_fake(model: &str, replies: &[&str]) -> FakeOllama {
    FakeOllama::builder()
        .script(model, replies.iter().map(|r| (*r).to_string()).collect())
        .start()
        .await
}

/// A schema full of what the converter rejects: `$defs` and `$ref`, a type
/// list, an unanchored pattern and a `true` sub-schema.
pub fn hostile_schema() -> Value {
    json!({
        "$defs": {"Tag": {"type": "string", "pattern": "[a-z]+"}},
        "type": "object",
        "properties": {
            "tag": {"$ref": "#/$defs/Tag"},
            "note": {"type": ["string", "null"]},
            "extra": true,
            "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}
        },
        "required": ["tag", "note", "extra"]
    })
}

/// Nothing llama.cpp's converter rejects, anywhere in `schema`.
pub fn assert_grammar_safe(schema: &Value) {
    fn visit(v: &Value, at: &str) {
        match v {
            Value::Object(m) => {
                for bad in ["$ref", "$defs", "definitions", "oneOf", "allOf", "not"] {
                    assert!(!m.contains_key(bad), "{bad} at {at}: {v}");
                }
                if let Some(t) = m.get("type") {
                    assert!(t.is_string(), "type list at {at}: {v}");
                }
                if let Some(p) = m.get("pattern").and_then(Value::as_str) {
                    assert!(p.starts_with('^') && p.ends_with('$'), "{p} at {at}");
                }
                for (k, x) in m {
                    if matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                        continue;
                    }
                    if k == "properties" {
                        for (name, sub) in x.as_object().unwrap() {
                            assert!(sub.is_object(), "non-object schema at {at}/{name}");
                            visit(sub, &format!("{at}/properties/{name}"));
                        }
                    } else if k == "items" || k == "additionalProperties" {
                        // `additionalProperties: false` is fine; `true` is a schema.
                        assert!(*x != json!(true), "true sub-schema at {at}/{k}");
                        visit(x, &format!("{at}/{k}"));
                    } else {
                        visit(x, &format!("{at}/{k}"));
                    }
                }
            }
            Value::Array(xs) => xs.iter().for_each(|x| visit(x, at)),
            _ => {}
        }
    }
    visit(schema, "");
    assert!(
        fake_ollama::schema::check(schema).is_ok(),
        "converter rejects {schema}"
    );
}
