//! The status page: one HTML shell with its script, style and icon, all
//! compiled in (no build step, nothing fetched from elsewhere). The shell
//! holds no data; its script polls `GET /-/status.json` every few seconds
//! with the admin token, which it asks for when one is configured and
//! keeps in the tab's `sessionStorage`. Served with a strict
//! Content-Security-Policy: scripts, styles and fetches from this origin
//! only, no inline code.

use axum::{
    Router,
    extract::State,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
    routing::get,
};

use crate::state::AppState;

const HTML: &str = include_str!("status.html");
const SCRIPT: &str = include_str!("status.js");
const STYLE: &str = include_str!("status.css");
const ICON: &str = include_str!("status.svg");

/// What the page may load: its own script, style, icon and JSON.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The page's routes, open without the token: they hold no data.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/-/status", get(page))
        .route(
            "/-/status.js",
            get(|| asset(SCRIPT, "text/javascript; charset=utf-8")),
        )
        .route(
            "/-/status.css",
            get(|| asset(STYLE, "text/css; charset=utf-8")),
        )
        .route("/-/status.svg", get(|| asset(ICON, "image/svg+xml")))
}

/// The shell; it says whether the JSON needs a token, so that the page
/// asks for one before its first request rather than after a 401.
async fn page(State(state): State<AppState>) -> Response {
    super::status::started_at();
    let needs = if state.config.admin_token.is_some() {
        "required"
    } else {
        "none"
    };
    asset_owned(HTML.replace("{{token}}", needs), "text/html; charset=utf-8")
}

async fn asset(body: &'static str, content_type: &'static str) -> Response {
    with_headers(body.into_response(), content_type)
}

fn asset_owned(body: String, content_type: &'static str) -> Response {
    with_headers(body.into_response(), content_type)
}

fn with_headers(mut response: Response, content_type: &'static str) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}
