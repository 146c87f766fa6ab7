//! The admin listener, separate from the proxy port: liveness, readiness,
//! Prometheus metrics, the active policy and the upstreams' state.

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

use crate::state::AppState;

/// The admin router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/-/policies", get(policies))
        .route("/-/upstreams", get(upstreams))
        .with_state(state)
}

async fn healthy() -> &'static str {
    "OK\n"
}

/// 200 while at least one upstream answers `GET /api/version` (all are
/// probed at once, each for at most 2 s); else 503 naming each failure.
async fn ready(State(state): State<AppState>) -> Response {
    let probes = state.fleet.probe_all().await;
    if probes.iter().any(Result::is_ok) {
        return (StatusCode::OK, "ready\n").into_response();
    }
    let mut text = String::new();
    for (i, probe) in probes.iter().enumerate() {
        if let Err(e) = probe {
            let name = state.fleet.name(i).unwrap_or("?");
            text.push_str(&format!("{name}: {e}\n"));
        }
    }
    (StatusCode::SERVICE_UNAVAILABLE, text).into_response()
}

/// Every upstream's health, requests in flight, models and loaded models,
/// read again now (each call bounded to 2 s).
async fn upstreams(State(state): State<AppState>) -> Response {
    state.fleet.refresh(true).await;
    Json(state.fleet.status_json()).into_response()
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
