//! Surfaces: the wire shapes clients speak, as the edge of the request
//! path. Each generation surface translates its request into the
//! pipeline's Ollama-shaped [`Exchange`], runs [`pipeline::run`] and
//! renders the outcome in its own shape (JSON, NDJSON or SSE events), with
//! errors in its own error shape; when nothing applies, the client's own
//! bytes go upstream unchanged. Admission has run before any handler here.
//!
//! | Surface | Routes | Module |
//! |---|---|---|
//! | Ollama | `/api/chat`, `/api/generate` | [`ollama`] |
//! | OpenAI chat | `/v1/chat/completions` | [`openai`] |
//! | OpenAI Responses | `/v1/responses` | [`responses`] |
//! | Anthropic Messages | `/v1/messages` | [`anthropic`] |
//! | capabilities | `/api/show`, `/api/tags` | [`advertise`] |
//! | listings of several upstreams | `/api/ps`, `/v1/models` | [`listing`] |
//! | everything else | | [`passthrough`] |

pub mod advertise;
pub mod anthropic;
pub mod listing;
pub mod ollama;
pub mod openai;
pub mod passthrough;
pub mod responses;

use axum::{body::Body, extract::Request, response::Response};
use bytes::Bytes;
use http::request::Parts;
use serde_json::{Map, Value};

use crate::{
    error::ProxyError,
    ingress::{Admitted, Model},
    pipeline::{self, Context, Exchange, Outcome},
    state::AppState,
};

/// The JSON object of an admitted body. Admission read its models the way
/// the upstream will; a body augur must change but cannot parse in full
/// (a lone surrogate, a number out of range, nesting past 128) is refused
/// rather than forwarded unchanged.
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ProxyError> {
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

/// Forward the client's own bytes.
pub async fn forward_bytes(
    state: &AppState,
    parts: Parts,
    bytes: Bytes,
) -> Result<Response, ProxyError> {
    passthrough::forward(state, Request::from_parts(parts, Body::from(bytes))).await
}

/// The body an admitted request carries, and its model, when the request
/// is one augur may change: a model was named and a field augur acts on
/// is present (or a policy schema applies to the model).
pub fn acted_on(admitted: &Admitted) -> Option<&Model> {
    let model = admitted.model.as_ref()?;
    (admitted.acted_on || model.policy.format.is_some()).then_some(model)
}

/// Run `exchange` for an admitted request under what admission
/// established (policy snapshot, model, principal, usage meter).
pub async fn run(
    state: &AppState,
    admitted: &Admitted,
    model: &Model,
    parts: &Parts,
    exchange: Exchange,
) -> Result<Outcome, ProxyError> {
    let fallback = model.policy.fallback.as_ref().and_then(|f| {
        pipeline::fallback::Chain::new(f, &model.raw, &model.name, |name| {
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
        principal: admitted.principal.label(),
        usage: &admitted.usage,
        fallback,
    };
    pipeline::run(cx, exchange).await
}
