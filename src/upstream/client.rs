//! One upstream's client: the pooled connections to it, its timeouts,
//! and one exchange (request up, response head and body down) as the
//! module doc of `upstream` describes.

use std::{
    pin::Pin,
    sync::Arc,
    time::{Duration, Instant},
};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, Uri, header};

use super::{
    failure::Failure,
    headers::{self, strip_hop_by_hop},
    load::InFlight,
    pool::{self, Ahead, Pool, SlotAddr},
    relay::{RelayBody, Terminator},
    replay::Replay,
};
use crate::{
    client::ClientInfo,
    error::{Flavor, ProxyError},
    telemetry::Timing,
};

/// Idle upstream connections kept per pool.
const MAX_IDLE: usize = 1024;
/// Connections opened to each upstream when augur starts, shared out
/// among the worker threads (each has its own pool), and kept open while
/// requests need fewer; at most the upstream's `warm_connections`. Past
/// the start, connections are opened ahead in proportion to demand (see
/// `pool/ahead.rs`).
pub(crate) const WARM_FLOOR: usize = 4;
/// The longest a worker waits for its connections opened ahead before it
/// serves anyway.
pub(crate) const WARM_WITHIN: Duration = Duration::from_secs(2);
/// How long an idle upstream connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How often idle connections past their timeout, or closed by the
/// upstream, are dropped.
const SWEEP_EVERY: Duration = Duration::from_secs(15);

/// The forwarding client and where it forwards to.
#[derive(Clone)]
pub struct Upstream {
    pub(super) pool: Pool,
    /// Its configured name (metric labels, logs); the URL's `host:port`
    /// until named.
    pub(super) name: String,
    base: Uri,
    /// The base URL's path without its trailing `/` (often empty).
    prefix: String,
    authority: HeaderValue,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
}

impl Upstream {
    /// A pooled client for `base` (an `http://host:port` URL, maybe with a path prefix).
    pub fn new(
        base: Uri,
        connect_timeout: Duration,
        first_byte_timeout: Duration,
        idle_timeout: Duration,
    ) -> Result<Self, ProxyError> {
        if base.scheme_str().is_some_and(|s| s != "http") {
            return Err(ProxyError::Internal(
                "the upstream URL must be http://".into(),
            ));
        }
        let host_port = base
            .authority()
            .ok_or_else(|| ProxyError::Internal("upstream URL has no host".into()))?;
        if host_port.as_str().contains('@') {
            // It would go out in every Host header (config loading refuses it).
            return Err(ProxyError::Internal(
                "the upstream URL must not hold credentials".into(),
            ));
        }
        let authority = HeaderValue::from_str(host_port.as_str())
            .map_err(|e| ProxyError::Internal(format!("upstream host: {e}")))?;
        let addr = format!(
            "{}:{}",
            host_port.host(),
            host_port.port_u16().unwrap_or(80)
        );
        let pool = Pool::new(addr, connect_timeout, POOL_IDLE_TIMEOUT, MAX_IDLE);
        let prefix = base.path().trim_end_matches('/').to_string();
        Ok(Self {
            pool,
            name: host_port.as_str().to_string(),
            base,
            prefix,
            authority,
            first_byte_timeout,
            idle_timeout,
        })
    }

    /// The same client, named `name` in its metrics and logs.
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// The same client, connecting to whatever address `slot` holds (a
    /// member found by DNS); its `Host` stays the URL's.
    pub(crate) fn dialing(mut self, slot: Arc<SlotAddr>) -> Self {
        self.pool = self.pool.dialing(slot);
        self
    }

    /// Every few seconds, for as long as the current runtime runs: drop
    /// idle upstream connections past their timeout or closed by the
    /// upstream, then open connections ahead of requests as `ahead` says
    /// (see `pool/ahead.rs`; nothing with `Ahead::default()`).
    pub(crate) fn spawn_sweeper(&self, ahead: Ahead) {
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let start = tokio::time::Instant::now() + SWEEP_EVERY;
            let mut tick = tokio::time::interval_at(start, SWEEP_EVERY);
            loop {
                tick.tick().await;
                pool.sweep().await;
                pool.top_up(ahead).await;
            }
        });
    }

    /// Open `ahead.floor` idle connections ahead of the first requests
    /// (see `pool/ahead.rs`); returns how many were opened.
    pub(crate) async fn warm(&self, ahead: Ahead) -> usize {
        self.pool.warm(ahead.floor).await
    }

    /// The upstream base URL.
    pub fn base(&self) -> &Uri {
        &self.base
    }

    /// Send `req` upstream and return its response with a streaming body,
    /// for the client.
    ///
    /// The returned body records upstream time into `timing`. If the
    /// upstream body fails, an NDJSON / SSE stream ends with an error line
    /// (event); any other body ends in an error (the client connection is
    /// aborted), and when it fails before its first byte the answer is an
    /// error (502, or 504 when it stalled) instead of the upstream's head.
    pub async fn forward(
        &self,
        req: Request<Body>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
    ) -> Result<Response<Body>, ProxyError> {
        self.attempt(req, client, timing, Mode::Forward, None, None)
            .await
            .map_err(|f| f.error)
    }

    /// Send `req` upstream for augur itself: like [`Upstream::forward`],
    /// but a failed body is an error in the body whatever its content
    /// type, never an error line that would pass for data. augur holds
    /// the body, so the request can be sent again (see [`Replay`]).
    pub async fn call(
        &self,
        req: Request<Bytes>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
    ) -> Result<Response<Body>, ProxyError> {
        let replay = Replay::new(req.body().clone());
        let req = req.map(Body::from);
        self.attempt(req, client, timing, Mode::Call, None, Some(&replay))
            .await
            .map_err(|f| f.error)
    }

    /// [`Upstream::forward`] or [`Upstream::call`], saying on failure
    /// whether another upstream may be asked; `in_flight` is held until
    /// the response body ends; `replay` is the request's body when augur
    /// holds it.
    pub(crate) async fn attempt(
        &self,
        req: Request<Body>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
        mode: Mode,
        in_flight: Option<InFlight>,
        replay: Option<&Replay>,
    ) -> Result<Response<Body>, Failure> {
        // The error shape the client reads, set by admission.
        let flavor = match mode {
            Mode::Forward => req
                .extensions()
                .get::<Flavor>()
                .copied()
                .unwrap_or_default(),
            Mode::Call => Flavor::default(),
        };
        // A Responses stream ends as the Responses API ends a failed one.
        let responses = req.uri().path() == "/v1/responses";
        let (parts, incoming, started) =
            self.exchange(req, client, timing.as_ref(), replay).await?;
        let terminator = match mode {
            Mode::Forward => {
                let ct = parts.headers.get(header::CONTENT_TYPE);
                Terminator::for_content_type(ct, flavor, responses)
            }
            Mode::Call => Terminator::None,
        };
        let mut body = RelayBody::new(incoming, terminator, self.idle_timeout, timing, started)
            .holding(in_flight);
        if mode == Mode::Forward {
            body = body.ending_the_request();
        }
        if mode == Mode::Forward && terminator == Terminator::None {
            Pin::new(&mut body).first_frame().await.map_err(|error| {
                // Reset before the first byte: nothing reached the client.
                let retryable = matches!(
                    error,
                    ProxyError::UpstreamUnavailable(_) | ProxyError::UpstreamCut(_)
                );
                Failure {
                    error,
                    retryable,
                    unsent: None,
                    stalled: false,
                }
            })?;
        }
        Ok(Response::from_parts(parts, Body::new(body)))
    }

    /// Send `req` and wait for the response head (hop-by-hop headers
    /// dropped); returns when the request was sent.
    async fn exchange(
        &self,
        mut req: Request<Body>,
        client: Option<ClientInfo>,
        timing: Option<&Arc<Timing>>,
        replay: Option<&Replay>,
    ) -> Result<(http::response::Parts, pool::DrivenBody, Instant), Failure> {
        *req.uri_mut() = self.origin_form(req.uri()).map_err(Failure::final_)?;
        *req.version_mut() = http::Version::HTTP_11;
        headers::prepare_request_headers(req.headers_mut(), &self.authority, client);
        crate::telemetry::otel::inject_current(req.headers_mut());

        let started = Instant::now();
        let sent = tokio::time::timeout(self.first_byte_timeout, self.send(req, replay)).await;
        // A call that got no answer spent its time on the upstream too;
        // one that did is counted by its body (see `relay`).
        let waited = || {
            if let Some(t) = timing {
                t.upstream_time(started.elapsed());
            }
        };
        let response = match sent {
            // The upstream may be working on it (a model loading): asking
            // another one would not be sooner.
            Err(_) => {
                waited();
                return Err(Failure::stalled(ProxyError::UpstreamTimeout(
                    self.first_byte_timeout.as_millis(),
                )));
            }
            Ok(Err(failure)) => {
                waited();
                return Err(failure);
            }
            Ok(Ok(response)) => response,
        };
        let (mut parts, incoming) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        Ok((parts, incoming, started))
    }

    /// The request target sent upstream: the base path, then the client's
    /// path and query (origin form, as an HTTP/1.1 client sends it).
    fn origin_form(&self, uri: &Uri) -> Result<Uri, ProxyError> {
        if self.prefix.is_empty()
            && let Some(pq) = uri.path_and_query()
        {
            return Ok(Uri::from(pq.clone()));
        }
        let path_and_query = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        format!("{}{path_and_query}", self.prefix)
            .parse()
            .map_err(|e| ProxyError::BadRequest(format!("invalid request path: {e}")))
    }
}

/// How a response is handed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// To the client: a failed stream ends with an error line.
    Forward,
    /// To augur itself: a failed body is an error.
    Call,
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
