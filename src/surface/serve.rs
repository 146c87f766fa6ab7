//! [`serve`]: one generation request on any surface: forwarded as sent
//! when augur has nothing to change, else translated, run through the
//! pipeline and rendered, errors in the route's own shape.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::Request,
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header, request::Parts};
use serde_json::{Map, Value};

use crate::{
    error::ProxyError,
    ingress::{Admitted, Model},
    pipeline::{self, Context, Exchange, Outcome},
    state::AppState,
    telemetry::Timing,
};

use super::adapter::{Adapter, Amended, Translation};
use super::{passthrough, recorded};

/// Answer an admitted request on `surface`: recorded, and from the
/// response cache, when its model's policy says so ([`recorded`]);
/// forwarded unchanged when augur has nothing to change, else translated,
/// run through the pipeline and rendered; errors in the route's own shape.
pub(crate) async fn serve<A: Adapter>(
    surface: &A,
    state: AppState,
    admitted: Admitted,
    req: Request,
) -> Response {
    if !recorded::applies(&admitted, &req) {
        return handle(surface, state, admitted, req)
            .await
            .unwrap_or_else(IntoResponse::into_response);
    }
    let (st, adm) = (state.clone(), admitted.clone());
    recorded::serve(&st, &adm, req, |req| async move {
        handle(surface, state, admitted, req)
            .await
            .unwrap_or_else(IntoResponse::into_response)
    })
    .await
}

async fn handle<A: Adapter>(
    surface: &A,
    state: AppState,
    admitted: Admitted,
    req: Request,
) -> Result<Response, ProxyError> {
    let (parts, _) = req.into_parts();
    let bytes = admitted.body.clone().unwrap_or_default();
    let Some(model) = acted_on(&admitted) else {
        return forward_as_sent(surface, &state, &admitted, parts, bytes).await;
    };
    let body = parse_object(&bytes)?;
    let Translation::Run(mut exchange, meta) = surface.translate(body)?;
    if A::OWN_BODY {
        exchange.raw = Some(bytes.clone());
    }
    match run(&state, &admitted, model, &parts, exchange).await? {
        Outcome::Forward => match surface.amended(&meta) {
            Some(amended) => forward_amended(&state, parts, amended).await,
            None => forward_as_sent(surface, &state, &admitted, parts, bytes).await,
        },
        Outcome::ForwardAsSent => forward_bytes(&state, parts, bytes).await,
        Outcome::Output(out) => {
            let timing = parts.extensions.get::<Arc<Timing>>().cloned();
            Ok(surface.render(meta, out, timing))
        }
    }
}

/// The JSON object of an admitted body. Admission read its models the way
/// the upstream will; a body augur must change but cannot parse in full
/// (a lone surrogate, a number out of range, nesting past 128) is refused
/// rather than forwarded unchanged.
fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ProxyError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProxyError::BadRequest(
            "the request body must be a JSON object".into(),
        )),
        Err(e) => Err(ProxyError::BadRequest(format!(
            "augur cannot read this request body: {e}"
        ))),
    }
}

/// Forward the client's request as it came: its own bytes, or (for the
/// token counts) the adapter's [`Metered`] body with the answer restored.
async fn forward_as_sent<A: Adapter>(
    surface: &A,
    state: &AppState,
    admitted: &Admitted,
    parts: Parts,
    bytes: Bytes,
) -> Result<Response, ProxyError> {
    let Some(metered) = surface.metered(&bytes) else {
        return forward_bytes(state, parts, bytes).await;
    };
    let amended = Amended {
        body: metered.body,
        headers: HeaderMap::new(),
    };
    let answer = forward_amended(state, parts, amended).await?;
    Ok((metered.answer)(answer, admitted.usage.clone()))
}

/// Forward the client's own bytes.
async fn forward_bytes(
    state: &AppState,
    parts: Parts,
    bytes: Bytes,
) -> Result<Response, ProxyError> {
    passthrough::forward(state, Request::from_parts(parts, Body::from(bytes))).await
}

/// Forward an amended body (its length in place of the client's), and add
/// the amendment's headers to the answer.
async fn forward_amended(
    state: &AppState,
    mut parts: Parts,
    amended: Amended,
) -> Result<Response, ProxyError> {
    parts.headers.remove(header::TRANSFER_ENCODING);
    parts.headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(amended.body.len()),
    );
    let req = Request::from_parts(parts, Body::from(amended.body.clone()));
    let mut r = passthrough::forward_amended(state, req, amended.body).await?;
    r.headers_mut().extend(amended.headers);
    Ok(r)
}

/// The body an admitted request carries, and its model, when the request
/// is one augur may change: a model was named and a field augur acts on
/// is present (or a policy schema applies to the model).
fn acted_on(admitted: &Admitted) -> Option<&Model> {
    let model = admitted.model.as_ref()?;
    let scored = model.policy.confidence().is_some();
    (admitted.acted_on || model.policy.format.is_some() || scored).then_some(model)
}

/// Run `exchange` for an admitted request under what admission
/// established (policy snapshot, model, principal, usage meter).
async fn run(
    state: &AppState,
    admitted: &Admitted,
    model: &Model,
    parts: &Parts,
    exchange: Exchange,
) -> Result<Outcome, ProxyError> {
    let below = model.policy.fallback_below();
    let fallback = model.policy.fallback.as_ref().and_then(|f| {
        pipeline::job::Chain::new(f, (&model.raw, &model.name), below, |name| {
            crate::limits::check_model(&admitted.policy, &admitted.principal, name).is_ok()
        })
    });
    let cx = Context {
        state,
        parts,
        policy: &admitted.policy,
        model: &model.raw,
        model_name: &model.name,
        model_policy: &model.policy,
        principal: &admitted.principal,
        usage: &admitted.usage,
        fallback,
        affinity: admitted.affinity,
    };
    // Boxed: the pipeline's state is tens of KB, which would otherwise be
    // part of every request's handler future, forwarded ones included,
    // and copied each time that future moves.
    Box::pin(pipeline::run(cx, exchange)).await
}
