//! Forwarding to Ollama with hyper's HTTP/1.1 client: bytes through
//! untouched (no redirects, no decompression, no header rewriting beyond
//! what a reverse proxy must do). Connections are kept alive in a
//! pool (`pool.rs`) and driven by the request using them.
//!
//! What this module changes on the way up: `Host` becomes the upstream's
//! (Ollama answers 403 to a non-local Host when it listens on loopback),
//! `X-Forwarded-For` / `X-Forwarded-Proto` are added, hop-by-hop headers are
//! dropped. On the way down only hop-by-hop headers are dropped. Timeouts
//! for connect and first byte become 502/504. An upstream body that fails
//! mid-way ends the client's stream with an `{"error": ...}` line instead
//! of a silent truncation; a whole (non-stream) body that fails is a 502
//! when nothing of it was sent yet, and an aborted connection otherwise
//! (see `guard.rs`).

pub mod capabilities;
mod guard;
mod pool;

use std::{
    net::IpAddr,
    pin::Pin,
    sync::Arc,
    time::{Duration, Instant},
};

use axum::body::Body;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, Uri, header};

use crate::{
    error::{Flavor, ProxyError},
    telemetry::Timing,
};
use guard::{GuardedBody, Terminator};
use pool::{Pool, SendError};

/// Idle upstream connections kept per pool.
const MAX_IDLE: usize = 1024;
/// How long an idle upstream connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How often idle connections past their timeout, or closed by the
/// upstream, are dropped.
const SWEEP_EVERY: Duration = Duration::from_secs(15);

/// The forwarding client and where it forwards to.
#[derive(Clone)]
pub struct Upstream {
    pool: Pool,
    base: Uri,
    /// The base URL's path without its trailing `/` (often empty).
    prefix: String,
    authority: HeaderValue,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
}

/// Where a request came from, for auth, limits and `X-Forwarded-*`; made
/// once per client connection and put in each request's extensions.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub ip: IpAddr,
    /// `ip` as a header value, for `X-Forwarded-For`.
    forwarded_for: HeaderValue,
}

impl ClientInfo {
    /// The client at `ip`.
    pub fn new(ip: IpAddr) -> Self {
        let forwarded_for = HeaderValue::from_str(&ip.to_string())
            .unwrap_or_else(|_| HeaderValue::from_static("unknown"));
        Self { ip, forwarded_for }
    }
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
            base,
            prefix,
            authority,
            first_byte_timeout,
            idle_timeout,
        })
    }

    /// Drop idle upstream connections past their timeout or closed by the
    /// upstream every few seconds, for as long as the current runtime runs.
    pub fn spawn_sweeper(&self) {
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SWEEP_EVERY);
            loop {
                tick.tick().await;
                pool.sweep().await;
            }
        });
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
        // The error shape the client reads, set by admission.
        let flavor = req
            .extensions()
            .get::<Flavor>()
            .copied()
            .unwrap_or_default();
        let (parts, incoming, started) = self.exchange(req, client, timing.as_ref()).await?;
        let terminator =
            Terminator::for_content_type(parts.headers.get(header::CONTENT_TYPE), flavor);
        let mut body = GuardedBody::new(incoming, terminator, self.idle_timeout, timing, started);
        if terminator == Terminator::None {
            Pin::new(&mut body).first_frame().await?;
        }
        Ok(Response::from_parts(parts, Body::new(body)))
    }

    /// Send `req` upstream for augur itself: like [`Upstream::forward`],
    /// but a failed body is an error in the body whatever its content
    /// type, never an error line that would pass for data.
    pub async fn call(
        &self,
        req: Request<Body>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
    ) -> Result<Response<Body>, ProxyError> {
        let (parts, incoming, started) = self.exchange(req, client, timing.as_ref()).await?;
        let body = GuardedBody::new(
            incoming,
            Terminator::None,
            self.idle_timeout,
            timing,
            started,
        );
        Ok(Response::from_parts(parts, Body::new(body)))
    }

    /// Send `req` and wait for the response head (hop-by-hop headers
    /// dropped); returns when the request was sent.
    async fn exchange(
        &self,
        mut req: Request<Body>,
        client: Option<ClientInfo>,
        timing: Option<&Arc<Timing>>,
    ) -> Result<(http::response::Parts, pool::DrivenBody, Instant), ProxyError> {
        *req.uri_mut() = self.origin_form(req.uri())?;
        *req.version_mut() = http::Version::HTTP_11;
        prepare_request_headers(req.headers_mut(), &self.authority, client);

        let started = Instant::now();
        let sent = tokio::time::timeout(self.first_byte_timeout, self.send(req)).await;
        let response = match sent {
            Err(_) => {
                return Err(ProxyError::UpstreamTimeout(
                    self.first_byte_timeout.as_millis(),
                ));
            }
            Ok(result) => result?,
        };
        if let Some(t) = timing {
            t.upstream_headers(started.elapsed());
        }
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

    /// Send on a pooled connection. A request that never reached a reused
    /// connection (the upstream had just closed it) is sent again on a
    /// new one.
    async fn send(&self, req: Request<Body>) -> Result<Response<pool::DrivenBody>, ProxyError> {
        let lease = self.pool.checkout().await?;
        let fresh = lease.fresh;
        match lease.send(req).await {
            Ok(response) => Ok(response),
            Err(SendError {
                request: Some(req), ..
            }) if !fresh => {
                let lease = self.pool.connect().await?;
                lease.send(req).await.map_err(|e| describe(&e.error))
            }
            Err(e) => Err(describe(&e.error)),
        }
    }
}

/// A client error as a 502, with its causes.
fn describe(e: &hyper::Error) -> ProxyError {
    use std::error::Error as _;
    let mut detail = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        detail = format!("{detail}: {s}");
        source = s.source();
    }
    ProxyError::UpstreamUnavailable(detail)
}

/// Hop-by-hop headers (RFC 9110 §7.6.1) are for one connection only.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Remove hop-by-hop headers, including those named in `Connection`.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none: one pass over the names is cheaper than
    // removing each by hash.
    let present =
        |name: &HeaderName| HOP_BY_HOP.contains(name) || name.as_str() == "proxy-connection";
    if !headers.keys().any(present) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

fn prepare_request_headers(
    headers: &mut HeaderMap,
    authority: &HeaderValue,
    client: Option<ClientInfo>,
) {
    strip_hop_by_hop(headers);
    headers.insert(header::HOST, authority.clone());
    if let Some(client) = client {
        let forwarded = match headers.get(&X_FORWARDED_FOR).map(HeaderValue::as_bytes) {
            Some(prior) if !prior.is_empty() => {
                let mut joined = prior.to_vec();
                joined.extend_from_slice(b", ");
                joined.extend_from_slice(client.forwarded_for.as_bytes());
                HeaderValue::from_bytes(&joined).ok()
            }
            _ => Some(client.forwarded_for.clone()),
        };
        if let Some(v) = forwarded {
            headers.insert(X_FORWARDED_FOR, v);
        }
        if !headers.contains_key(&X_FORWARDED_PROTO) {
            headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static("http"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_are_dropped() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-secret"),
        );
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key(header::CONTENT_TYPE));
    }

    #[test]
    fn forwarded_headers_append() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("proxy.example.com"));
        h.insert("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        let client = ClientInfo::new("192.168.1.2".parse().unwrap());
        prepare_request_headers(
            &mut h,
            &HeaderValue::from_static("127.0.0.1:11434"),
            Some(client),
        );
        assert_eq!(h[header::HOST], "127.0.0.1:11434");
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 192.168.1.2");
        assert_eq!(h["x-forwarded-proto"], "http");
    }

    #[test]
    fn upstream_uris_keep_a_path_prefix() {
        let up = Upstream::new(
            "http://127.0.0.1:1/ollama".parse().unwrap(),
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap();
        let uri: Uri = "/api/tags?x=1".parse().unwrap();
        assert_eq!(
            up.origin_form(&uri).unwrap().to_string(),
            "/ollama/api/tags?x=1"
        );
        let root = Upstream::new(
            "http://127.0.0.1:1".parse().unwrap(),
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(root.origin_form(&uri).unwrap().to_string(), "/api/tags?x=1");
    }
}
