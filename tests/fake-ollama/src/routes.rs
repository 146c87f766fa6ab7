//! The route table, and the middleware that counts and records every request (augur's tests
//! read them back through [`crate::FakeOllama::last_json`] and friends).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{delete, get, head, post};
use bytes::Bytes;

use crate::{
    RecordedRequest, Shared, anthropic, catalog, lock, manage, native, openai, responses, wire,
};

async fn record(State(st): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let c = &st.counters;
    c.total.fetch_add(1, Ordering::Relaxed);
    let path = req.uri().path();
    {
        let mut per = lock(&c.per_path);
        match per.get_mut(path) {
            Some(n) => *n += 1,
            None => {
                per.insert(path.to_owned(), 1);
            }
        }
    }
    if st.hung.load(Ordering::Relaxed) && generates(path) {
        // Never answers; dropped when the client goes away.
        std::future::pending::<()>().await;
    }
    if !st.record {
        return next.run(req).await;
    }
    let path = path.to_owned();
    let (parts, body) = req.into_parts();
    let keep_body = !path.starts_with("/api/blobs/");
    let (bytes, body) = if keep_body {
        match axum::body::to_bytes(body, usize::MAX).await {
            Ok(b) => (b.clone(), Body::from(b)),
            Err(_) => return wire::empty(400),
        }
    } else {
        (Bytes::new(), body)
    };
    let rec = RecordedRequest {
        method: parts.method.clone(),
        uri: parts.uri.to_string(),
        headers: parts.headers.clone(),
        body: bytes,
    };
    lock(&c.last_by_path).insert(path, rec.clone());
    *lock(&c.last) = Some(rec);
    next.run(Request::from_parts(parts, body)).await
}

/// The routes a wedged runner never answers.
fn generates(path: &str) -> bool {
    matches!(
        path,
        "/api/chat" | "/api/generate" | "/api/embed" | "/api/embeddings"
    ) || (path.starts_with("/v1/") && !path.starts_with("/v1/models"))
}

pub(crate) fn router(st: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(catalog::root).head(catalog::root))
        .route("/api/version", get(catalog::version))
        .route("/api/tags", get(catalog::tags))
        .route("/api/ps", get(catalog::ps))
        .route("/api/show", post(catalog::show))
        .route("/api/chat", post(native::chat))
        .route("/api/generate", post(native::generate))
        .route("/api/embed", post(manage::embed))
        .route("/api/embeddings", post(manage::embeddings))
        .route("/api/pull", post(manage::pull))
        .route("/api/push", post(manage::push))
        .route("/api/create", post(manage::create))
        .route("/api/copy", post(manage::copy))
        .route("/api/delete", delete(manage::delete))
        .route(
            "/api/blobs/{digest}",
            head(manage::blob_head).post(manage::blob_upload),
        )
        .route("/v1/chat/completions", post(openai::chat))
        .route("/v1/completions", post(openai::completions))
        .route("/v1/embeddings", post(openai::embeddings))
        .route("/v1/responses", post(responses::create))
        .route("/v1/messages", post(anthropic::create))
        .route("/v1/models", get(openai::models))
        .route("/v1/models/{*model}", get(openai::model))
        .fallback(|| async { wire::respond(404, "text/plain", "404 page not found") })
        .method_not_allowed_fallback(|| async {
            wire::respond(405, "text/plain", "405 method not allowed")
        })
        .layer(middleware::from_fn_with_state(st.clone(), record))
        .with_state(st)
}
