//! `GET /-/status.json`: everything the status page shows, read from
//! memory (nothing is asked of the upstreams or the disk, so the page may
//! poll it every few seconds):
//!
//! ```text
//! {
//!   "now", "started_at", "version",
//!   "totals":   { requests, endings: { complete, refused, error, upstream_cut,
//!                 timed_out, client_left }, repairs, retries, fallbacks, refusals },
//!   "upstreams": [ { name, url, healthy, stalled, in_flight,
//!                    loaded: [ { name, names, size, size_vram, expires_at } ],
//!                    loaded_read_at, loaded_error, last_error } ],
//!   "limits":   { queues, budgets, rates: { default, keys, usage }, store },
//!   "policy":   { version, loaded_at, files, last_error, last_error_at, effective },
//!   "cache":    { bytes, entries, principals: [ { principal, hit, miss, bypass } ] },
//!   "events":   [ { at, request_id, principal, model, kind, detail } ]   // newest first
//! }
//! ```

use std::{sync::OnceLock, time::SystemTime};

use axum::{
    Json,
    extract::State,
    http::header,
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::{state::AppState, telemetry};

/// When this process started (first asked: at the admin router's build).
pub(super) fn started_at() -> SystemTime {
    static STARTED: OnceLock<SystemTime> = OnceLock::new();
    *STARTED.get_or_init(SystemTime::now)
}

pub(super) async fn snapshot(State(state): State<AppState>) -> Response {
    let events = &state.events;
    let policy = state.policies.snapshot();
    let body = json!({
        "now": telemetry::rfc3339(SystemTime::now()),
        "started_at": telemetry::rfc3339(started_at()),
        "version": env!("CARGO_PKG_VERSION"),
        "totals": events.totals_json(),
        "upstreams": state.fleet.loaded_json(),
        "limits": state.limits.status_json(&policy),
        "policy": state.policies.status_json(),
        "cache": state.cache.status_json(),
        "events": events.recent_json(),
    });
    ([(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}
