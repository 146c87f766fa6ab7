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
/// The body also says how the shared limit store is, if one is
/// configured: its outage does not make augur unready (the policy's
/// `limits.on_store_error` decides what requests get meanwhile, and every
/// replica shares the store anyway).
async fn ready(State(state): State<AppState>) -> Response {
    let probes = state.fleet.probe_all().await;
    let (status, mut text) = if probes.iter().any(Result::is_ok) {
        (StatusCode::OK, "ready\n".to_string())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, String::new())
    };
    for (i, probe) in probes.iter().enumerate() {
        if let Err(e) = probe {
            let name = state.fleet.name(i).unwrap_or("?");
            text.push_str(&format!("{name}: {e}\n"));
        }
    }
    match state.limits.store_health() {
        None => {}
        Some(h) if h.up => text.push_str(&format!("limit store {}: up\n", h.location)),
        Some(h) => text.push_str(&format!(
            "limit store {}: down ({})\n",
            h.location,
            h.error.as_deref().unwrap_or("no connection")
        )),
    }
    (status, text).into_response()
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
