//! API keys end to end over real sockets with live policies: every route
//! but the liveness probe wants a key (bearer or `X-API-Key`), a missing or
//! wrong key is 401 without the key echoed, a model outside a key's globs
//! is 403, and listing or describing models needs the key but is not
//! counted against its rate limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client, header,
    live::{Live, bounded, chat, error_text, header_u64, sha256_hex},
};
use serde_json::{Value, json};

#[tokio::test]
async fn auth_guards_every_route_but_liveness() {
    bounded(20, async {
        let policy = format!(
            "auth:\n  required: true\n  keys:\n    \
             - {{id: ci, key_sha256: {}, models: [\"gemma3:*\"], rate_limit: {{requests_per_minute: 2}}}}\n    \
             - {{id: ops, key_sha256: {}}}\n",
            sha256_hex("ci-secret"),
            sha256_hex("ops-secret"),
        );
        let live = Live::start(&policy).await;
        let c = client();

        // Liveness probes need no key.
        let r = c.get(live.url("/")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let r = c.head(live.url("/")).send().await.unwrap();
        assert_eq!(r.status(), 200);

        // Everything else does: missing and wrong keys are 401.
        let chat_body = json!({"model": "gemma3", "stream": false, "messages": [{"role": "user", "content": "hi"}]});
        let routes: Vec<(&str, &str, Option<Value>)> = vec![
            ("POST", "/", None),
            ("GET", "/api/tags", None),
            ("GET", "/api/version", None),
            ("GET", "/api/ps", None),
            ("POST", "/api/show", Some(json!({"model": "gemma3"}))),
            ("POST", "/api/chat", Some(chat_body.clone())),
            ("POST", "/api/generate", Some(json!({"model": "gemma3", "prompt": "hi", "stream": false}))),
            ("POST", "/api/embed", Some(json!({"model": "gemma3", "input": "hi"}))),
            ("GET", "/v1/models", None),
            ("POST", "/v1/chat/completions", Some(json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}]}))),
        ];
        for (method, path, body) in &routes {
            for key in [None, Some("not-the-key-4711")] {
                let mut req = c.request(method.parse().unwrap(), live.url(path));
                if let Some(b) = body {
                    req = req.json(b);
                }
                if let Some(k) = key {
                    req = req.bearer_auth(k);
                }
                let r = req.send().await.unwrap();
                assert_eq!(r.status(), 401, "{method} {path} key={key:?}");
                assert_eq!(header(&r, "www-authenticate"), Some("Bearer"));
                let text = r.text().await.unwrap();
                assert!(!text.contains("not-the-key-4711"), "{text}");
                if !path.starts_with("/v1/") {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    assert!(v["error"].is_string(), "{method} {path}: {text}");
                }
            }
        }
        // A wrong key in X-API-Key is refused too.
        let r = c
            .get(live.url("/api/tags"))
            .header("x-api-key", "not-the-key-4711")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(live.fake.requests("/api/tags"), 0, "refused before the upstream");
        assert_eq!(live.fake.requests("/api/chat"), 0);

        // Listing and describing models needs the key but does not count:
        // `ci` may make only 2 counted requests a minute.
        for _ in 0..3 {
            let r = c.get(live.url("/api/tags")).bearer_auth("ci-secret").send().await.unwrap();
            assert_eq!(r.status(), 200);
            let r = c.get(live.url("/api/version")).header("x-api-key", "ci-secret").send().await.unwrap();
            assert_eq!(r.status(), 200);
            let r = c
                .post(live.url("/api/show"))
                .header("X-API-Key", "ci-secret")
                .json(&json!({"model": "gemma3"}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
        }
        // Both header spellings authenticate generation routes.
        let r = c.post(live.url("/api/chat")).bearer_auth("ci-secret").json(&chat_body).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header_u64(&r, "ratelimit-limit"), 2);
        let r = c
            .post(live.url("/api/generate"))
            .header("x-api-key", "ci-secret")
            .json(&json!({"model": "gemma3:latest", "prompt": "hi", "stream": false}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let r = c.post(live.url("/api/chat")).bearer_auth("ci-secret").json(&chat_body).send().await.unwrap();
        assert_eq!(r.status(), 429, "the third counted request of `ci`");

        // A model outside the key's globs is 403, on every route naming one.
        let forbidden = [
            ("/api/chat", json!({"model": "qwen3", "stream": false, "messages": [{"role": "user", "content": "hi"}]})),
            ("/api/generate", json!({"model": "llama3.2", "prompt": "hi", "stream": false})),
            ("/api/embed", json!({"model": "qwen3:8b", "input": "hi"})),
            ("/api/show", json!({"model": "qwen3"})),
        ];
        for (path, body) in &forbidden {
            let r = c.post(live.url(path)).bearer_auth("ci-secret").json(body).send().await.unwrap();
            assert_eq!(r.status(), 403, "{path}");
            let text = error_text(r).await;
            assert!(!text.contains("ci-secret"), "{text}");
        }
        // `ops` has no model list: every model.
        let r = chat(&live, "qwen3", Some("ops-secret")).await;
        assert_eq!(r.status(), 200);
        let r = c.get(live.url("/api/ps")).bearer_auth("ops-secret").send().await.unwrap();
        assert_eq!(r.status(), 200);
    })
    .await;
}
