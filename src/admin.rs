//! The admin listener, separate from the proxy port: liveness, readiness,
//! Prometheus metrics and the active policy.

use std::time::Duration;

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use http_body_util::Empty;

use crate::state::AppState;

/// The admin router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/-/policies", get(policies))
        .with_state(state)
}

async fn healthy() -> &'static str {
    "OK\n"
}

/// 200 only while the upstream answers `GET /`. The body also says how
/// the shared limit store is, if one is configured: its outage does not
/// make augur unready (the policy's `limits.on_store_error` decides what
/// requests get meanwhile, and every replica shares the store anyway).
async fn ready(State(state): State<AppState>) -> Response {
    let (status, text) = upstream_ready(&state).await;
    let store = match state.limits.store_health() {
        None => String::new(),
        Some(h) if h.up => format!("limit store {}: up\n", h.location),
        Some(h) => format!(
            "limit store {}: down ({})\n",
            h.location,
            h.error.as_deref().unwrap_or("no connection")
        ),
    };
    (status, format!("{text}{store}")).into_response()
}

async fn upstream_ready(state: &AppState) -> (StatusCode, String) {
    // The upstream's own base path is added when forwarding.
    let req =
        match http::Request::get("/").body(axum::body::Body::new(Empty::<bytes::Bytes>::new())) {
            Ok(req) => req,
            Err(_) => return (StatusCode::SERVICE_UNAVAILABLE, String::new()),
        };
    let probe = tokio::time::timeout(
        Duration::from_secs(2),
        state.upstream.forward(req, None, None),
    )
    .await;
    match probe {
        Ok(Ok(r)) if r.status().is_success() => (StatusCode::OK, "ready\n".into()),
        Ok(Ok(r)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("upstream answered {}\n", r.status()),
        ),
        Ok(Err(e)) => (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "upstream did not answer in 2 s\n".into(),
        ),
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let text = state
        .metrics
        .as_ref()
        .map(|h| h.render())
        .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// The active policy's version, files and last rejection, and the merged
/// policy in force (`effective`; see [`crate::policy::show::effective`]).
async fn policies(State(state): State<AppState>) -> Response {
    Json(state.policies.status_json()).into_response()
}
