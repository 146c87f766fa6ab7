//! Exchange recording in front of the response cache (see
//! [`crate::record`]): a request whose model's policy sets `record:`
//! carries a [`Tap`] in its extensions to every upstream call it makes,
//! and its answer is copied as it goes out. Other requests pass
//! untouched.

use std::future::Future;

use axum::{extract::Request, response::Response};

use crate::{
    ingress::Admitted,
    record::{self, Meta, Tap},
    state::AppState,
};

use super::cached;

/// Whether `req` goes through recording or the response cache: its
/// model's policy records exchanges, or caches this one. Requests neither
/// applies to (most traffic) pay this check alone.
pub(crate) fn applies(admitted: &Admitted, req: &Request) -> bool {
    let records = admitted
        .model
        .as_ref()
        .is_some_and(|m| m.policy.record.is_some());
    records || cached::applies(admitted, req)
}

/// Answer `req` as [`cached::serve`] does, recorded when its model's
/// policy says so.
pub(crate) async fn serve<F, Fut>(
    state: &AppState,
    admitted: &Admitted,
    mut req: Request,
    answer: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let Some(tap) = tap(state, admitted, &req) else {
        return cached::serve(state, admitted, req, answer).await;
    };
    req.extensions_mut().insert(tap.clone());
    let response = cached::serve(state, admitted, req, answer).await;
    record::answer(response, tap)
}

/// A new tap when the request's model records its exchanges.
fn tap(state: &AppState, admitted: &Admitted, req: &Request) -> Option<Tap> {
    let model = admitted.model.as_ref()?;
    let policy = model.policy.record.as_ref()?;
    let sink = state.record.sink(policy)?;
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let meta = Meta {
        request_id: request_id.to_string(),
        method: req.method().to_string(),
        route: req.uri().path().to_string(),
        principal: admitted.principal.label().to_string(),
        model: model.name.clone(),
    };
    let body = admitted.body.as_deref().unwrap_or_default();
    Some(Tap::new(sink, policy.redact.clone(), meta, body))
}
