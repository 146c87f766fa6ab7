//! The admin listener, separate from the proxy port: liveness, readiness,
//! Prometheus metrics, the active policy, the upstreams' state and the
//! status page ([`page`], fed by [`status`]).

mod page;
mod status;

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};

use crate::state::AppState;

/// The admin router. With an admin token configured, every route but
/// `/-/healthy` and the status page's shell (`/-/status`, its script and
/// style, which hold no data) needs `Authorization: Bearer <token>` (401
/// otherwise).
pub fn router(state: AppState) -> Router {
    status::started_at();
    let guarded = Router::new()
        .route("/-/ready", get(ready))
        .route("/-/status.json", get(status::snapshot))
        .route("/metrics", get(metrics))
        .route("/-/policies", get(policies))
        .route("/-/upstreams", get(upstreams))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/-/healthy", get(healthy))
        .merge(page::routes())
        .merge(guarded)
        .with_state(state)
}

/// 401 unless the request presents the admin token, when one is set.
async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(token) = &state.config.admin_token else {
        return next.run(req).await;
    };
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes())
        .and_then(|v| {
            (v.len() > 7 && v[..7].eq_ignore_ascii_case(b"bearer ")).then(|| v[7..].trim_ascii())
        });
    if presented.is_some_and(|p| token.matches(p)) {
        return next.run(req).await;
    }
    metrics::counter!("augur_auth_failures_total", "reason" => "admin_token").increment(1);
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        Json(serde_json::json!({"error": "the admin listener needs its token (Authorization: Bearer …)"})),
    )
        .into_response()
}

async fn healthy() -> &'static str {
    "OK\n"
}

/// 200 while at least one upstream answers `GET /api/version` (all are
/// probed at once, each for at most 2 s); else 503 naming each failure.
/// The body also says how the shared limit store is, if one is
/// configured: its outage does not make augur unready (the policy's
/// `limits.on_store_error` decides what requests get meanwhile, and every
/// replica shares the store anyway). 503 `draining` once a shutdown signal
/// was taken, whatever the upstreams.
async fn ready(State(state): State<AppState>) -> Response {
    if crate::shutdown::draining() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    let probes = state.fleet.probe_all().await;
    let (status, mut text) = if probes.iter().any(|(_, p)| p.is_ok()) {
        (StatusCode::OK, "ready\n".to_string())
    } else if probes.is_empty() {
        let waiting = "no upstream member yet (no DNS answer with an address)\n";
        (StatusCode::SERVICE_UNAVAILABLE, waiting.to_string())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, String::new())
    };
    for (name, probe) in &probes {
        if let Err(e) = probe {
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

/// The active policy's version, files and last rejection, the merged
/// policy in force (`effective`; see [`crate::policy::show::effective`]),
/// and `warnings`: fallback models no upstream lists, against the
/// upstreams' model lists read again now (see
/// [`crate::policy::show::fallback_warnings`]).
async fn policies(State(state): State<AppState>) -> Response {
    use crate::policy::show;
    let mut body = state.policies.status_json();
    state.fleet.refresh(true).await;
    let listed = show::listed_by(&state.fleet.status_json());
    let warnings = show::fallback_warnings(&state.policies.snapshot(), listed);
    for w in &warnings {
        tracing::warn!(warning = %w, "policy warning");
    }
    body["warnings"] = serde_json::json!(warnings);
    Json(body).into_response()
}
