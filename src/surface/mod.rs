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

pub(crate) mod advertise;
pub mod anthropic;
mod cached;
pub(crate) mod dropped;
pub(crate) mod frames;
pub(crate) mod listing;
pub(crate) mod ollama;
pub(crate) mod openai;
pub(crate) mod passthrough;
pub(crate) mod responses;

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
    limits::Usage,
    pipeline::{self, Context, Exchange, Outcome, output::Output, plan::Route},
    state::AppState,
    telemetry::Timing,
};

/// A generation surface: how its request becomes the pipeline's
/// [`Exchange`] and how the pipeline's output goes back in its own wire
/// shape. [`serve`] does the rest, the same for every surface.
pub trait Adapter: Sync {
    /// What rendering needs to know of the request (the model as the
    /// client named it, ids, stream options).
    type Meta: Send;

    /// Whether a translated exchange's body is the client's own JSON as it
    /// came (Ollama's routes): then, when augur only reads the answer, the
    /// client's bytes go upstream rather than the body re-encoded.
    const OWN_BODY: bool = false;

    /// Translate the admitted request's JSON object, or leave the request
    /// to the upstream unchanged ([`Translation::Forward`]). Translation
    /// only: what the model or upstream can do is the pipeline's to decide.
    fn translate(&self, body: Map<String, Value>) -> Result<Translation<Self::Meta>, ProxyError>;

    /// The pipeline's output in the surface's own shape; a stream that
    /// fails reports how it ended to `timing`.
    fn render(&self, meta: Self::Meta, out: Output, timing: Option<Arc<Timing>>) -> Response;

    /// What goes upstream when the pipeline forwards a translated request:
    /// `None`, the client's own bytes; else the client's body less what the
    /// translation left out (tools neither the model nor the upstream can
    /// run), and the headers that say so.
    fn amended(&self, _meta: &Self::Meta) -> Option<Amended> {
        None
    }

    /// What goes upstream in place of a body forwarded as it came, so that
    /// its answer reports the tokens the client did not ask to see; `None`:
    /// the client's own bytes (see [`openai::usage`]).
    fn metered(&self, _body: &[u8]) -> Option<Metered> {
        None
    }
}

/// A forwarded body amended only to have the upstream count tokens, and
/// what puts the answer back as the client's own body would have had it
/// (reporting the counts to the request's [`Usage`]).
pub struct Metered {
    pub body: Bytes,
    pub answer: fn(Response, Arc<Usage>) -> Response,
}

/// A client's body as an adapter amended it, forwarded in place of the
/// client's own bytes, and the headers its answer gets.
pub struct Amended {
    pub body: Bytes,
    pub headers: HeaderMap,
}

/// What [`Adapter::translate`] made of a request.
pub enum Translation<M> {
    /// Run this exchange; render its output with this meta.
    Run(Exchange, M),
    /// Forward the client's own bytes: the upstream does what the request
    /// asks better than augur would.
    Forward,
}

impl<M> Translation<M> {
    /// Run an Ollama `/api/chat` body translated from another surface
    /// (whose `stream` defaults to false).
    pub fn chat(body: Map<String, Value>, meta: M) -> Self {
        Self::Run(Exchange::new(Route::Chat, body, false), meta)
    }
}

/// Answer an admitted request on `surface`: from the response cache when
/// its model has one and it holds the answer ([`cached`]); else forward it
/// unchanged when augur has nothing to change, or translate, run the
/// pipeline and render; errors in the route's own error shape.
pub async fn serve<A: Adapter>(
    surface: &A,
    state: AppState,
    admitted: Admitted,
    req: Request,
) -> Response {
    let (st, adm) = (state.clone(), admitted.clone());
    cached::serve(&st, &adm, req, |req| async move {
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
    let Translation::Run(mut exchange, meta) = surface.translate(body)? else {
        return forward_as_sent(surface, &state, &admitted, parts, bytes).await;
    };
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

/// A whole answer as Ollama's compatibility layers write it: `json` and a
/// newline (Go's `json.Encoder`), with the output's `X-Augur-*` headers.
fn json_answer(mut json: String, headers: HeaderMap) -> Response {
    json.push('\n');
    let mut r = Response::new(Body::from(json));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().extend(headers);
    r
}

/// An answer of SSE events, with the output's `X-Augur-*` headers;
/// `no_cache`: the layer also sends `Cache-Control: no-cache`.
fn sse_answer(body: Body, no_cache: bool, headers: HeaderMap) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    if no_cache {
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    r.headers_mut().extend(headers);
    r
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
