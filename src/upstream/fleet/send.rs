//! Sending a request through the fleet: to the chosen upstream, and on to
//! another one while nothing has reached the client.
//!
//! A request that failed before any byte reached the client (connection
//! refused, reset before the answer, a 502) is sent once more, to another
//! upstream that has the model; a 503 (Ollama's "server busy") goes to each
//! other upstream that has the model before the last 503 is answered. An
//! answer that has begun is never repeated. Sending again needs the
//! request's body: the caller hands it over when it holds it (`replay`);
//! otherwise only a request that never left augur is sent again.
//!
//! Before any of this, an upstream that had closed the kept-alive
//! connection a request went to is given the request once more on a new
//! connection (see `upstream/resend.rs`): a failure counts against an
//! upstream only after that.
//!
//! A request with no first byte within `first_byte_timeout` marks its
//! upstream stalled (a wedged runner behind a server that still answers
//! its probes): ranked after the others until it serves a request again,
//! or for [`super::member::STALL_HOLD`]. With its body held, the request
//! is sent once more to another upstream; else the client gets the 504.

use std::sync::Arc;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};

use tracing::Instrument;

use super::{
    member::Member,
    pick,
    state::Fleet,
    target::{Target, X_AUGUR_UPSTREAM},
};
use crate::{
    client::ClientInfo,
    error::{Flavor, ProxyError},
    record::Tap,
    telemetry::{Timing, spans},
    upstream::{
        client::{Mode, Upstream},
        failure::Failure,
        replay::Replay,
    },
};

/// Most failures (refused, reset, 502) one request goes through: the
/// first attempt and one more.
const MAX_FAILURES: u32 = 2;

/// What is needed to send a request again: its head as it came, and its
/// body when the caller held it.
struct Template<'a> {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    flavor: Option<Flavor>,
    replay: Option<&'a Replay>,
}

impl<'a> Template<'a> {
    fn of(req: &Request<Body>, replay: Option<&'a Replay>) -> Self {
        Self {
            method: req.method().clone(),
            uri: req.uri().clone(),
            version: req.version(),
            headers: req.headers().clone(),
            flavor: req.extensions().get::<Flavor>().copied(),
            replay,
        }
    }

    /// A new copy of the request, when its body is held.
    fn build(&self) -> Option<Request<Body>> {
        let body = self.replay?.body().clone();
        Some(self.restore(Request::new(Body::from(body))))
    }

    /// `req` with the head it came with (an attempt rewrote its target and
    /// headers for its upstream).
    fn restore(&self, mut req: Request<Body>) -> Request<Body> {
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        if let Some(flavor) = self.flavor {
            req.extensions_mut().insert(flavor);
        }
        req
    }
}

/// What goes with a request to every upstream it is sent to.
struct Sending<'a> {
    target: &'a Target,
    replay: Option<&'a Replay>,
    client: Option<ClientInfo>,
    timing: Option<Arc<Timing>>,
    mode: Mode,
}

impl Fleet {
    /// Forward a client's request (see [`crate::upstream::Upstream::forward`]).
    pub async fn forward(
        &self,
        req: Request<Body>,
        target: &Target,
        replay: Option<Replay>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
    ) -> Result<Response<Body>, ProxyError> {
        let sending = Sending {
            target,
            replay: replay.as_ref(),
            client,
            timing,
            mode: Mode::Forward,
        };
        self.send(req, sending).await
    }

    /// Send augur's own request (see [`crate::upstream::Upstream::call`]).
    pub async fn call(
        &self,
        req: Request<Body>,
        target: &Target,
        replay: Option<Bytes>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
    ) -> Result<Response<Body>, ProxyError> {
        let replay = replay.map(Replay::new);
        let sending = Sending {
            target,
            replay: replay.as_ref(),
            client,
            timing,
            mode: Mode::Call,
        };
        self.send(req, sending).await
    }

    /// Send `req`, its call noted on the request's [`Tap`] when it is
    /// recorded.
    async fn send(
        &self,
        req: Request<Body>,
        sending: Sending<'_>,
    ) -> Result<Response<Body>, ProxyError> {
        // One await either way: a request that records nothing carries no
        // more state than before.
        let tapped = req.extensions().get::<Tap>().and_then(|tap| {
            let body = sending.replay.map(|r| r.body().as_ref());
            let call = tap.call(req.uri().path(), body)?;
            Some((tap.clone(), call))
        });
        let answer = self.send_untapped(req, sending).await;
        match tapped {
            Some((tap, call)) => tap.answered(call, answer),
            None => answer,
        }
    }

    async fn send_untapped(
        &self,
        mut req: Request<Body>,
        sending: Sending<'_>,
    ) -> Result<Response<Body>, ProxyError> {
        let pinned = if req.headers().contains_key(&X_AUGUR_UPSTREAM) {
            let pinned = self.pinned(req.headers())?;
            req.headers_mut().remove(&X_AUGUR_UPSTREAM);
            if sending.mode == Mode::Forward {
                self.count(sending.target, "pinned");
            }
            pinned
        } else {
            None
        };
        let only = if self.is_single() { Some(0) } else { pinned };
        match only {
            Some(i) => self.once(i, req, &sending).await,
            // Boxed: its state is needed with several upstreams only.
            None => Box::pin(self.spread(req, &sending)).await,
        }
    }

    /// Send to the upstreams that may take the request, in turn, until one
    /// answers (see the module doc).
    async fn spread(
        &self,
        req: Request<Body>,
        sending: &Sending<'_>,
    ) -> Result<Response<Body>, ProxyError> {
        let target = sending.target;
        let template = Template::of(&req, sending.replay);
        let mut next = Some(req);
        let mut tried = 0u64;
        let mut failures = 0u32;
        let mut last: Option<Result<Response<Body>, ProxyError>> = None;
        while let Some(i) = self.pick(target, tried) {
            let Some(req) = next.take().or_else(|| template.build()) else {
                break;
            };
            let (Some(member), Some(upstream)) = (self.member(i), self.clients.get(i)) else {
                break;
            };
            if tried != 0 {
                tracing::info!(upstream = member.name(), "sending to another upstream");
                metrics::counter!("augur_upstream_failovers_total").increment(1);
            }
            tried |= pick::bit(i);
            match traced(upstream, &member, req, sending).await {
                Ok(response) => {
                    let status = response.status();
                    if !is_failed(status) {
                        member.served();
                        return Ok(response);
                    }
                    member.failed(&format!("answered {status}"));
                    if status == StatusCode::BAD_GATEWAY {
                        failures += 1;
                    }
                    last = Some(Ok(response));
                }
                Err(Failure {
                    error,
                    stalled: true,
                    ..
                }) => {
                    member.stalled(&error.to_string());
                    failures += 1;
                    last = Some(Err(error));
                    if template.replay.is_none() {
                        break;
                    }
                }
                Err(Failure {
                    error,
                    retryable,
                    unsent,
                    ..
                }) => {
                    if !retryable {
                        return Err(error);
                    }
                    member.failed(&error.to_string());
                    failures += 1;
                    next = unsent.map(|r| template.restore(r));
                    last = Some(Err(error));
                }
            }
            if failures >= MAX_FAILURES {
                break;
            }
        }
        last.unwrap_or_else(|| {
            Err(ProxyError::UpstreamUnavailable(
                "no upstream could take the request".into(),
            ))
        })
    }

    /// Send to upstream `i` only.
    async fn once(
        &self,
        i: usize,
        req: Request<Body>,
        sending: &Sending<'_>,
    ) -> Result<Response<Body>, ProxyError> {
        let (Some(member), Some(upstream)) = (self.member(i), self.clients.get(i)) else {
            return Err(ProxyError::UpstreamUnavailable(
                "no upstream could take the request".into(),
            ));
        };
        match traced(upstream, &member, req, sending).await {
            Ok(response) => {
                if is_failed(response.status()) {
                    member.failed(&format!("answered {}", response.status()));
                } else {
                    member.served();
                }
                Ok(response)
            }
            Err(f) => {
                if f.stalled {
                    member.stalled(&f.error.to_string());
                } else if f.retryable {
                    member.failed(&f.error.to_string());
                }
                Err(f.error)
            }
        }
    }
}

/// One request to `upstream`, in a trace span of its own (its trace
/// context is what goes upstream as `traceparent`).
async fn traced(
    upstream: &Upstream,
    member: &Member,
    req: Request<Body>,
    sending: &Sending<'_>,
) -> Result<Response<Body>, Failure> {
    let model = match sending.target {
        Target::Model { name, .. } => Some(name.as_str()),
        Target::Any | Target::First => None,
    };
    let span = spans::upstream(member.name(), model, req.method(), req.uri().path());
    if let Some(t) = &sending.timing {
        t.set_upstream(member.label());
    }
    let (client, timing) = (sending.client.clone(), sending.timing.clone());
    let result = upstream
        .attempt(
            req,
            client,
            timing,
            sending.mode,
            Some(member.start()),
            sending.replay,
        )
        .instrument(span.clone())
        .await;
    match &result {
        Ok(response) => spans::record_status(&span, response.status().as_u16()),
        Err(failure) => spans::record_error(&span, &failure.error),
    }
    result
}

/// An answer that says the upstream cannot serve now: 502 (a proxy in
/// front of a dead Ollama) or 503 (Ollama's queue is full).
fn is_failed(status: StatusCode) -> bool {
    status == StatusCode::BAD_GATEWAY || status == StatusCode::SERVICE_UNAVAILABLE
}
