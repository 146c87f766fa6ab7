//! Format policies end to end over real sockets with live policies: a named
//! schema replaces JSON mode, or fills in a missing format, for matching
//! models, and a model's `validate` policy decides whether an answer still
//! invalid after its retry passes marked invalid or is answered 422.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client, header,
    live::{ANSWER_SCHEMA, Live, bounded, error_text},
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

#[tokio::test]
async fn a_named_format_replaces_json_mode_for_matching_models() {
    bounded(20, async {
        let live = Live::start(
            "models:\n  \"gemma3:*\":\n    format: {schema: answer.json, apply: when_json}\n",
        )
        .await;
        let ask = |model: &str, format: Option<Value>| {
            let mut body = json!({"model": model, "stream": false,
                "messages": [{"role": "user", "content": "Why is the sky blue?"}]});
            if let Some(f) = format {
                body["format"] = f;
            }
            client().post(live.url("/api/chat")).json(&body).send()
        };

        let r = ask("gemma3", Some(json!({"type": "json"}))).await.unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        let sent = live.fake.last_json("/api/chat").unwrap();
        let format = &sent["format"];
        assert_eq!(format["type"], "object", "{format}");
        assert_eq!(
            format["required"],
            json!(["answer", "confidence"]),
            "{format}"
        );
        assert_eq!(format["properties"]["answer"]["type"], "string");
        assert_eq!(format["properties"]["confidence"]["type"], "number");
        let content: Value =
            serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
        assert!(content["answer"].is_string(), "{content}");
        assert!(content["confidence"].is_number(), "{content}");

        // Other models keep JSON mode; a client schema or no format stays.
        let r = ask("llama3.2", Some(json!({"type": "json"})))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(live.fake.last_json("/api/chat").unwrap()["format"], "json");
        let own =
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
        let r = ask("gemma3:latest", Some(own)).await.unwrap();
        assert_eq!(r.status(), 200);
        let sent = live.fake.last_json("/api/chat").unwrap();
        assert_eq!(sent["format"]["required"], json!(["x"]), "{sent}");
        let r = ask("gemma3", None).await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            live.fake
                .last_json("/api/chat")
                .unwrap()
                .get("format")
                .is_none()
        );
    })
    .await;
}

#[tokio::test]
async fn a_named_format_applied_when_missing_reaches_a_request_without_one() {
    bounded(20, async {
        let live = Live::start(
            "models:\n  \"gemma3:*\":\n    format: {schema: answer.json, apply: when_missing}\n",
        )
        .await;
        let body = json!({"model": "gemma3", "stream": false,
            "messages": [{"role": "user", "content": "Why is the sky blue?"}]});
        let r = client()
            .post(live.url("/api/chat"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let sent = live.fake.last_json("/api/chat").unwrap();
        assert_eq!(
            sent["format"]["required"],
            json!(["answer", "confidence"]),
            "{sent}"
        );
        let v: Value = r.json().await.unwrap();
        let content: Value =
            serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
        assert!(content["answer"].is_string(), "{content}");
    })
    .await;
}

#[tokio::test]
async fn validation_failure_passes_or_answers_422_per_policy() {
    bounded(20, async {
        let junk = || {
            vec![
                "no JSON here, sorry".to_string(),
                "still no JSON".to_string(),
            ]
        };
        let fake = FakeOllama::builder()
            .script("scripted", junk())
            .script("scripted-strict", junk())
            .start()
            .await;
        let live = Live::with_fake(
            fake,
            "models:\n  scripted:\n    validate: {on_failure: pass}\n",
        )
        .await;
        let ask = |model: &str| {
            client()
                .post(live.url("/api/chat"))
                .json(&json!({"model": model, "stream": false,
                    "messages": [{"role": "user", "content": "answer"}],
                    "format": serde_json::from_str::<Value>(ANSWER_SCHEMA).unwrap()}))
                .send()
        };

        let r = ask("scripted").await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
        assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
        let v: Value = r.json().await.unwrap();
        let content = v["message"]["content"].as_str().unwrap();
        assert!(content.contains("no JSON"), "the best attempt: {content}");
        assert_eq!(v["done"], true);

        let r = ask("scripted-strict").await.unwrap();
        assert_eq!(r.status(), 422);
        assert!(header(&r, "x-augur-validation").is_none());
        let text = error_text(r).await;
        assert!(text.contains("format"), "{text}");
        assert_eq!(live.fake.requests("/api/chat"), 4, "one retry each");
    })
    .await;
}
