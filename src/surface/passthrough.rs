//! Routes augur does not change, forwarded byte for byte.
//!
//! Admission has already run (see [`crate::ingress`]): the body was read
//! and checked when the route names models, and is otherwise streamed
//! through the body limit (blob uploads of many GB stream unbounded and are
//! never held in memory).
//!
//! With several upstreams the route says where a request goes
//! ([`target`]): a request naming a model to an upstream that has it;
//! `/` and `/api/version` to any healthy one; management routes (pull,
//! push, create, copy, delete, blobs) and paths augur does not know to the
//! first healthy one in the configured order, unless `X-Augur-Upstream`
//! names one.

use axum::{
    extract::{Request, State},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::Method;

use crate::{
    client::ClientInfo,
    error::ProxyError,
    ingress::{Admitted, BodyLimit, Class},
    state::AppState,
    telemetry::Timing,
    upstream::{Replay, Target},
};

/// Fallback handler: forward anything augur does not handle itself (a
/// generation route, `/v1/completions`, through the response cache).
pub(crate) async fn handle(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    if !super::recorded::applies(&admitted, &req) {
        return forward_handled(state, req).await;
    }
    let st = state.clone();
    super::recorded::serve(&st, &admitted, req, |req| forward_handled(state, req)).await
}

/// Forward `req`; errors as responses.
async fn forward_handled(state: AppState, req: Request) -> Response {
    let limit = req.extensions().get::<BodyLimit>().cloned();
    forward(&state, req)
        .await
        .map_err(|e| match limit {
            // The body limit was hit while streaming the body upstream.
            Some(l) if l.exceeded() => ProxyError::BodyTooLarge(state.config.body_limit),
            _ => e,
        })
        .unwrap_or_else(IntoResponse::into_response)
}

/// Forward `req` to the upstream, with the client's address and timing.
pub(crate) async fn forward(state: &AppState, req: Request) -> Result<Response, ProxyError> {
    send(state, req, None).await
}

/// Forward `req`, whose body a surface amended to `body` (sent again, in
/// place of the body admission read, if the first upstream fails).
pub(crate) async fn forward_amended(
    state: &AppState,
    req: Request,
    body: Bytes,
) -> Result<Response, ProxyError> {
    send(state, req, Some(body)).await
}

async fn send(state: &AppState, req: Request, body: Option<Bytes>) -> Result<Response, ProxyError> {
    let client = req.extensions().get::<ClientInfo>().cloned();
    let timing = req.extensions().get::<std::sync::Arc<Timing>>().cloned();
    let (target, replay) = match req.extensions().get::<Admitted>() {
        Some(admitted) => (target(admitted), replay(admitted, &req, body)),
        None => (Target::First, body.map(Replay::new)),
    };
    // Boxed: the upstream exchange's state (several KB) is then allocated
    // once instead of being copied into each future that awaits it.
    Box::pin(state.fleet.forward(req, &target, replay, client, timing)).await
}

/// Where an admitted request goes (see the module doc).
pub(crate) fn target(admitted: &Admitted) -> Target {
    match (admitted.route.class, &admitted.model) {
        (Class::Model | Class::Meta, Some(model)) => Target::Model {
            name: model.name.clone(),
            prefer: None,
            affinity: admitted.affinity,
        },
        (Class::Liveness | Class::Meta | Class::Model, _) => Target::Any,
        (Class::Management | Class::Other, _) => Target::First,
    }
}

/// The body to send again if the upstream fails or had closed the
/// connection: the one a surface amended, else the one admission read, or
/// none at all for a GET or HEAD without one. A model-store change (pull,
/// push, create, copy, delete) goes again on a new connection only when it
/// was never written (see [`Replay::unwritten`]).
fn replay(admitted: &Admitted, req: &Request, amended: Option<Bytes>) -> Option<Replay> {
    let held = amended.or_else(|| admitted.body.clone()).or_else(|| {
        let bodiless = req.method() == Method::GET || req.method() == Method::HEAD;
        let empty = req
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .is_none_or(|v| v.as_bytes() == b"0")
            && !req.headers().contains_key(http::header::TRANSFER_ENCODING);
        (bodiless && empty).then(Bytes::new)
    })?;
    Some(match admitted.route.class {
        Class::Management => Replay::unwritten(held),
        _ => Replay::new(held),
    })
}
