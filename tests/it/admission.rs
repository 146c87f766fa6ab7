//! Admission runs for every route without the handler calling it: the
//! ingress layer in front of a router whose one handler only counts its
//! calls still authenticates, checks allow-lists and limits per route
//! class, and refused requests never reach the handler.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use augur::{
    Admitted, Class, IngressLayer,
    app::{self, AppState},
    config::Config,
    policy::load_texts,
};
use axum::{Router, extract::State, response::IntoResponse};
use common::client;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tower::Layer as _;

const KEY: &str = "gemma-only";

/// A handler that admits nothing itself: it counts and echoes the class.
async fn counting(State(calls): State<Arc<AtomicU64>>, admitted: Admitted) -> impl IntoResponse {
    calls.fetch_add(1, Ordering::SeqCst);
    format!("{:?}", admitted.route.class)
}

async fn serve(yaml: &str) -> (String, Arc<AtomicU64>) {
    let policy = load_texts(
        &[("10-test.yaml".to_string(), yaml.to_string())],
        std::path::Path::new("/nonexistent"),
    )
    .unwrap();
    let state = AppState::new(Config::default(), policy, None).unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let routes = Router::new().fallback(counting).with_state(calls.clone());
    let svc = IngressLayer::new(state.clone()).layer(routes);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_stop, rx) = tokio::sync::watch::channel(false);
    std::mem::forget(_stop);
    tokio::spawn(app::serve(
        listener,
        svc,
        rx,
        app::Accept::from_config(&state.config),
    ));
    (format!("http://{addr}"), calls)
}

fn policy() -> String {
    format!(
        "auth:\n  required: true\n  keys:\n    - {{id: g, key_sha256: {}, models: [\"gemma3:*\"], scopes: [generate, read, manage]}}\nmodels:\n  \"gemma3:*\": {{rate_limit: {{requests_per_minute: 3}}}}\n",
        hex::encode(Sha256::digest(KEY.as_bytes()))
    )
}

#[tokio::test]
async fn every_route_class_is_admitted_by_the_layer_alone() {
    let (url, calls) = serve(&policy()).await;
    let c = client();
    let send = |method: reqwest::Method, path: &str, key: bool, body: Option<&str>| {
        let mut r = c.request(method, format!("{url}{path}"));
        if key {
            r = r.bearer_auth(KEY);
        }
        if let Some(b) = body {
            r = r.body(b.to_string());
        }
        r.send()
    };
    // Liveness: never authenticated.
    let r = send(reqwest::Method::GET, "/", false, None).await.unwrap();
    assert_eq!(r.text().await.unwrap(), format!("{:?}", Class::Liveness));
    let gemma = r#"{"model":"gemma3","messages":[]}"#;
    let qwen = r#"{"model":"qwen3","messages":[]}"#;
    for (method, path, body, class) in [
        (reqwest::Method::GET, "/api/tags", None, Class::Meta),
        (
            reqwest::Method::POST,
            "/api/show",
            Some(r#"{"model":"gemma3"}"#),
            Class::Meta,
        ),
        (
            reqwest::Method::POST,
            "/api/chat",
            Some(gemma),
            Class::Model,
        ),
        (
            reqwest::Method::POST,
            "/v1/messages",
            Some(gemma),
            Class::Model,
        ),
        (
            reqwest::Method::POST,
            "/api/pull",
            Some(r#"{"model":"gemma3"}"#),
            Class::Management,
        ),
        (
            reqwest::Method::POST,
            "/api/unknown",
            Some("x"),
            Class::Other,
        ),
    ] {
        let before = calls.load(Ordering::SeqCst);
        // Without a key: 401, the handler never runs.
        let r = send(method.clone(), path, false, body).await.unwrap();
        assert_eq!(r.status(), 401, "{path}");
        assert_eq!(calls.load(Ordering::SeqCst), before, "{path}");
        // With it: the handler runs, told the route's class.
        let r = send(method.clone(), path, true, body).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.text().await.unwrap(), format!("{class:?}"), "{path}");
    }
    // Allow-lists on routes that name models, before the handler.
    let before = calls.load(Ordering::SeqCst);
    for path in [
        "/api/chat",
        "/api/show",
        "/v1/chat/completions",
        "/api/create",
    ] {
        let r = send(reqwest::Method::POST, path, true, Some(qwen))
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{path}");
    }
    // Limits: gemma3's 3 a minute were spent above by the counted routes
    // (chat, messages, pull); show is not counted.
    let r = send(reqwest::Method::POST, "/api/generate", true, Some(gemma))
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "refused requests never reach a handler"
    );
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[tokio::test]
async fn oversized_heads_are_431_in_the_routes_error_shape() {
    let (url, calls) = serve("{}").await;
    let gemma = r#"{"model":"gemma3","messages":[]}"#;
    let big = |n: usize| "x".repeat(n);
    let many = |n: usize| {
        let mut h = reqwest::header::HeaderMap::new();
        for i in 0..n {
            h.insert(
                reqwest::header::HeaderName::from_bytes(format!("x-n{i}").as_bytes()).unwrap(),
                reqwest::header::HeaderValue::from_static("1"),
            );
        }
        h
    };
    // One header over augur's bound, one over hyper's default buffer, and
    // more fields than hyper's default count.
    let cases = [
        ("/api/tags", big(100 * 1024), 0),
        ("/api/chat", big(600 * 1024), 0),
        ("/v1/chat/completions", big(600 * 1024), 0),
        ("/v1/messages", String::new(), 200),
        ("/api/chat", String::new(), 200),
    ];
    for (path, value, fields) in cases {
        let mut r = if path == "/api/tags" {
            client().get(format!("{url}{path}"))
        } else {
            client().post(format!("{url}{path}")).body(gemma)
        };
        if !value.is_empty() {
            r = r.header("x-big", value);
        }
        let r = r.headers(many(fields)).send().await.unwrap();
        assert_eq!(r.status(), 431, "{path}");
        let content_type = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(content_type.starts_with("application/json"), "{path}");
        let v: serde_json::Value = r.json().await.unwrap();
        let message = match path {
            "/v1/messages" => {
                assert_eq!(v["type"], "error", "{v}");
                assert_eq!(v["error"]["type"], "api_error", "{v}");
                v["error"]["message"].as_str()
            }
            "/v1/chat/completions" => {
                assert_eq!(v["error"]["type"], "api_error", "{v}");
                v["error"]["message"].as_str()
            }
            _ => v["error"].as_str(),
        };
        assert!(
            message.unwrap().contains("header fields too large"),
            "{path}: {v}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // Within the bounds: admitted.
    let r = client()
        .post(format!("{url}/api/chat"))
        .body(gemma)
        .header("x-big", big(60 * 1024))
        .headers(many(90))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
