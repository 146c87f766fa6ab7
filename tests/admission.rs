//! Admission runs for every route without the handler calling it: the
//! ingress layer in front of a router whose one handler only counts its
//! calls still authenticates, checks allow-lists and limits per route
//! class, and refused requests never reach the handler.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use augur::{
    app::{self, AppState},
    config::Config,
    ingress::{Admitted, Class, IngressLayer},
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
        "auth:\n  required: true\n  keys:\n    - {{id: g, key_sha256: {}, models: [\"gemma3:*\"]}}\nmodels:\n  \"gemma3:*\": {{rate_limit: {{requests_per_minute: 3}}}}\n",
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
