//! Admission: the one layer every proxied request passes before any
//! handler runs (stages 1-3: receive, authenticate, limit).
//!
//! ```text
//! path   = path::canonical(uri.path())?          // 400; routed, gated and forwarded as is
//! route  = routes::classify(method, path)        // class, error shape, model fields
//! head::check(parts)?                            // 431, request line and fields
//! policy = store.snapshot()                      // the one snapshot of the request
//! who    = authenticate(policy, headers)?        // 401 (not for liveness)
//! check_scope(who's scopes, route.scope())?      // 403: generate, read or manage
//! body   = read(body, limit)?                    // 413 / 408, routes that name models
//! names  = names::read(body, route.names)?       // 400 when Go would read it otherwise
//! check_model(policy, who, name)?                // 403, every named model, normalized
//! admission = limits.admit(policy, who, model, route.counts())?   // 429 / 503
//! strip Authorization / X-API-Key                // augur's keys are not Ollama's
//! affinity = affinity::of(path, body, who)       // several upstreams, routing: affinity
//! response = handler(request + Admitted)         // the handler never admits
//! hold(response, admission)                      // slot and token charge end with the body
//! ```
//!
//! Handlers read what admission established from the [`Admitted`]
//! extension; they cannot skip auth or limits, because they never call them.

mod admitted;
mod affinity;
pub(crate) mod head;
mod hold;
pub(crate) mod multipart;
pub(crate) mod names;
mod read;
pub(crate) mod routes;

use std::{
    convert::Infallible,
    net::{IpAddr, Ipv4Addr},
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use axum::{body::Body, extract::Request, response::Response};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{Uri, request::Parts};
use tracing::Instrument;

use crate::{
    client::ClientInfo,
    error::{Flavor, ProxyError},
    limits::{self, Principal, Usage},
    policy::normalize_model_name,
    state::AppState,
    telemetry::{
        Timing,
        genai::{self, Meter},
        spans,
    },
    wire::path,
};

pub use admitted::Admitted;
pub(crate) use admitted::{Facts, Model};
pub(crate) use read::BodyLimit;
pub use routes::Class;
pub(crate) use routes::RouteSpec;

/// Wraps the routes in [`Ingress`].
#[derive(Clone)]
pub struct IngressLayer {
    state: AppState,
}

impl IngressLayer {
    /// Admission under `state`'s policies and limits.
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

impl<S> tower::Layer<S> for IngressLayer {
    type Service = Ingress<S>;

    fn layer(&self, inner: S) -> Ingress<S> {
        Ingress {
            inner,
            state: self.state.clone(),
        }
    }
}

/// Admission in front of `S` (see the module doc).
#[derive(Clone)]
pub struct Ingress<S> {
    inner: S,
    state: AppState,
}

impl<S> tower::Service<Request> for Ingress<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Readiness is checked on the clone that serves the request.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let state = self.state.clone();
        let inner = self.inner.clone();
        Box::pin(async move { Ok(serve(state, inner, req).await) })
    }
}

async fn serve<S>(state: AppState, mut inner: S, req: Request) -> Response
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    use tower::ServiceExt as _;
    let raw_flavor = Flavor::of_path(req.uri().path());
    let started = Instant::now();
    let span = spans::admission();
    let admitted = admit(&state, req, started).instrument(span.clone()).await;
    let (req, route, usage, admission, meter) = match admitted {
        Ok(admitted) => admitted,
        Err((flavor, e)) => {
            spans::record_error(&span, &e);
            return e.into_response_for(flavor.unwrap_or(raw_flavor));
        }
    };
    drop(span);
    let invalidate = route.changes_models.then(|| state.capabilities.clone());
    let response = match inner.ready().await {
        Ok(svc) => match svc.call(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        },
        Err(never) => match never {},
    };
    // A handler's error, in the route's own shape.
    let response = crate::error::shaped(response, route.flavor);
    hold::hold(
        response,
        hold::Hold {
            admission: Some(admission),
            usage,
            invalidate,
            meter,
        },
    )
}

type Refused = (Option<Flavor>, ProxyError);

/// What [`serve`] keeps of an admitted request.
type Kept = (
    Request,
    &'static RouteSpec,
    Arc<Usage>,
    limits::Admission,
    Option<Meter>,
);

/// Stages 1-3; the request handed on carries [`Admitted`].
async fn admit(state: &AppState, req: Request, started: Instant) -> Result<Kept, Refused> {
    let (mut parts, body) = req.into_parts();
    canonicalize(&mut parts.uri).map_err(|e| (None, e))?;
    let route = routes::classify(&parts.method, parts.uri.path());
    let refuse = |e: ProxyError| (Some(route.flavor), e);
    head::check(&parts).map_err(refuse)?;
    let policy = state.policy();
    let ip = parts
        .extensions
        .get::<ClientInfo>()
        .map(|c| c.ip)
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let timing = parts.extensions.get::<Arc<Timing>>().cloned();
    let principal = if route.needs_key() {
        state
            .limits
            .authenticate(&policy, &parts.headers, ip)
            .map_err(|e| refuse(e.into()))?
    } else {
        Principal::anonymous(ip)
    };
    if let Some(t) = &timing {
        t.set_principal(principal.label());
    }
    if let Some(scope) = route.scope() {
        let allowed = route.allows(&limits::scopes(&policy, &principal));
        limits::check_scope(&principal, allowed, scope).map_err(|e| refuse(e.into()))?;
    }

    let mut named: Vec<String> = Vec::new();
    let mut acted_on = false;
    let (body, bytes) = if route.form {
        let bytes = read::whole(&parts, body, &state.config)
            .await
            .map_err(refuse)?;
        let form = reencode_form(&mut parts, &bytes).map_err(refuse)?;
        named.extend(form.model());
        (Body::from(form_body(&mut parts, &form)), None)
    } else if route.reads_body() {
        let bytes = read::whole(&parts, body, &state.config)
            .await
            .map_err(refuse)?;
        let names = names::read(&bytes, route.names)
            .map_err(|e| refuse(ProxyError::BadRequest(e.to_string())))?;
        acted_on = names.acted_on;
        named = names.models.into_iter().map(|(_, m)| m).collect();
        (Body::from(bytes.clone()), Some(bytes))
    } else {
        if route.path_model
            && let Some(m) = path::last_segment(parts.uri.path())
        {
            named.push(m);
        }
        (
            read::bounded(&mut parts, body, route, &state.config).map_err(refuse)?,
            None,
        )
    };

    let mut model = None;
    for (i, raw) in named.iter().enumerate() {
        let name = normalize_model_name(raw);
        limits::check_model(&policy, &principal, &name).map_err(|e| refuse(e.into()))?;
        if i == 0 {
            let model_policy = policy.models.resolve_normalized(&name);
            model = Some(Model {
                raw: raw.clone(),
                name,
                policy: model_policy,
            });
        }
    }
    if let (Some(m), Some(t)) = (&model, &timing) {
        t.set_model(&m.raw);
    }
    let usage = Arc::new(Usage::for_body(bytes.as_ref().map_or(0, Bytes::len)));
    let admission = state
        .limits
        .admit(
            &policy,
            &principal,
            model.as_ref().map(|m| (m.name.as_str(), &*m.policy)),
            route.counts(),
            usage.prompt_estimate(),
        )
        .await
        .map_err(|e| refuse(e.into()))?;

    if !state.config.forward_client_auth && policy.uses_keys() {
        limits::auth::strip_credentials(&mut parts.headers);
    }
    let meter = genai::operation(routes::metric_label(parts.uri.path()))
        .zip(model.as_ref())
        .map(|(operation, m)| Meter::new(started, operation, &m.name, principal.label(), timing));
    let several = !state.fleet.is_single();
    let affinity = affinity::of(
        &parts,
        bytes.as_deref(),
        &principal,
        model.as_ref(),
        several,
    );
    parts.extensions.insert(Admitted(Arc::new(Facts {
        route,
        policy,
        principal,
        model,
        body: bytes,
        acted_on,
        usage: usage.clone(),
        affinity,
    })));
    // The error shape the client reads, for errors ending a forwarded stream.
    parts.extensions.insert(route.flavor);
    Ok((
        Request::from_parts(parts, body),
        route,
        usage,
        admission,
        meter,
    ))
}

/// Read a `multipart/form-data` body strictly (400 otherwise) and drop the
/// query string: the form augur forwards is the only place a model can be.
fn reencode_form(parts: &mut Parts, bytes: &[u8]) -> Result<multipart::Form, ProxyError> {
    let bad = |e: multipart::FormError| ProxyError::BadRequest(e.to_string());
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multipart::boundary(content_type).map_err(bad)?;
    let form = multipart::parse(bytes, &boundary).map_err(bad)?;
    let path = parts.uri.path().to_string();
    parts.uri = path
        .parse()
        .map_err(|_| ProxyError::BadRequest("invalid request path".into()))?;
    Ok(form)
}

/// The body of a re-encoded form, with its headers set.
fn form_body(parts: &mut Parts, form: &multipart::Form) -> Bytes {
    let (content_type, body) = form.encode(&form.fresh_boundary());
    if let Ok(v) = http::HeaderValue::from_str(&content_type) {
        parts.headers.insert(http::header::CONTENT_TYPE, v);
    }
    parts.headers.insert(
        http::header::CONTENT_LENGTH,
        http::HeaderValue::from(body.len()),
    );
    body
}

/// Replace the request target with its canonical origin form (path and
/// query): what augur routes on is what it forwards.
fn canonicalize(uri: &mut Uri) -> Result<(), ProxyError> {
    let raw = uri.path();
    let absolute = uri.scheme().is_some() || uri.authority().is_some();
    if path::is_canonical(raw) && !absolute {
        return Ok(());
    }
    let canonical = path::canonical(raw).map_err(|e| ProxyError::BadRequest(e.to_string()))?;
    let target = match uri.query() {
        Some(q) => format!("{canonical}?{q}"),
        None => canonical,
    };
    *uri = target
        .parse()
        .map_err(|_| ProxyError::BadRequest("invalid request path".into()))?;
    Ok(())
}

impl From<limits::LimitError> for ProxyError {
    fn from(e: limits::LimitError) -> Self {
        ProxyError::Limited {
            status: e.status(),
            message: e.message(),
            headers: e.headers(),
        }
    }
}
