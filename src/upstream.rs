//! Forwarding to Ollama with the hyper-util client: bytes through untouched
//! (no redirects, no decompression, no header rewriting beyond what a
//! reverse proxy must do).
//!
//! What this module changes on the way up: `Host` becomes the upstream's
//! (Ollama answers 403 to a non-local Host when it listens on loopback),
//! `X-Forwarded-For` / `X-Forwarded-Proto` are added, hop-by-hop headers are
//! dropped. On the way down only hop-by-hop headers are dropped. Timeouts
//! for connect and first byte become 502/504, and an upstream body that
//! fails mid-way ends the client's stream with an `{"error": ...}` line
//! instead of a silent truncation.

use std::{
    net::IpAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, Uri, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioTimer},
};

use crate::{error::ProxyError, telemetry::Timing};

/// The forwarding client and where it forwards to.
#[derive(Clone)]
pub struct Upstream {
    client: Client<HttpConnector, Body>,
    base: Uri,
    authority: HeaderValue,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
}

/// Where the request came from, for `X-Forwarded-*`.
#[derive(Debug, Clone, Copy)]
pub struct ClientInfo {
    pub ip: IpAddr,
}

impl Upstream {
    /// A pooled client for `base` (an `http://host:port` URL, maybe with a path prefix).
    pub fn new(
        base: Uri,
        connect_timeout: Duration,
        first_byte_timeout: Duration,
        idle_timeout: Duration,
    ) -> Result<Self, ProxyError> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(connect_timeout));
        connector.enforce_http(true);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(1024)
            .build(connector);
        let authority = base
            .authority()
            .map(|a| a.as_str().to_string())
            .ok_or_else(|| ProxyError::Internal("upstream URL has no host".into()))?;
        let authority = HeaderValue::from_str(&authority)
            .map_err(|e| ProxyError::Internal(format!("upstream host: {e}")))?;
        Ok(Self {
            client,
            base,
            authority,
            first_byte_timeout,
            idle_timeout,
        })
    }

    /// The upstream base URL.
    pub fn base(&self) -> &Uri {
        &self.base
    }

    /// The upstream URI for a client path-and-query.
    pub fn uri_for(&self, path_and_query: &str) -> Result<Uri, ProxyError> {
        let prefix = self.base.path().trim_end_matches('/');
        let scheme = self.base.scheme_str().unwrap_or("http");
        let authority = self.base.authority().map(|a| a.as_str()).unwrap_or("");
        format!("{scheme}://{authority}{prefix}{path_and_query}")
            .parse()
            .map_err(|e| ProxyError::BadRequest(format!("invalid request path: {e}")))
    }

    /// Send `req` upstream and return its response with a streaming body.
    ///
    /// The returned body records upstream time into `timing` and ends with
    /// an error line (NDJSON / SSE) if the upstream body fails.
    pub async fn forward(
        &self,
        mut req: Request<Body>,
        client: Option<ClientInfo>,
        timing: Option<Arc<Timing>>,
    ) -> Result<Response<Body>, ProxyError> {
        let path_and_query = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".to_string());
        *req.uri_mut() = self.uri_for(&path_and_query)?;
        *req.version_mut() = http::Version::HTTP_11;
        prepare_request_headers(req.headers_mut(), &self.authority, client);

        let started = Instant::now();
        let sent = tokio::time::timeout(self.first_byte_timeout, self.client.request(req)).await;
        let response = match sent {
            Err(_) => {
                return Err(ProxyError::UpstreamTimeout(
                    self.first_byte_timeout.as_millis(),
                ));
            }
            Ok(Err(e)) => return Err(classify_client_error(&e)),
            Ok(Ok(response)) => response,
        };
        if let Some(t) = &timing {
            t.upstream_headers(started.elapsed());
        }
        let (mut parts, incoming) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        let terminator = Terminator::for_content_type(parts.headers.get(header::CONTENT_TYPE));
        let body = GuardedBody {
            inner: Body::new(incoming),
            terminator,
            idle_timeout: self.idle_timeout,
            sleep: None,
            state: State::Streaming,
            timing,
            started,
        };
        Ok(Response::from_parts(parts, Body::new(body)))
    }
}

/// Map a hyper-util client error to 502/504.
fn classify_client_error(e: &hyper_util::client::legacy::Error) -> ProxyError {
    use std::error::Error as _;
    let mut detail = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        detail = format!("{detail}: {s}");
        source = s.source();
    }
    if e.is_connect() {
        if detail.contains("timed out") || detail.contains("timeout") {
            return ProxyError::UpstreamTimeout(0);
        }
        return ProxyError::UpstreamUnavailable(detail);
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

fn prepare_request_headers(
    headers: &mut HeaderMap,
    authority: &HeaderValue,
    client: Option<ClientInfo>,
) {
    strip_hop_by_hop(headers);
    headers.insert(header::HOST, authority.clone());
    if let Some(client) = client {
        let ip = client.ip.to_string();
        let forwarded = match headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
            Some(prior) if !prior.is_empty() => format!("{prior}, {ip}"),
            _ => ip,
        };
        if let Ok(v) = HeaderValue::from_str(&forwarded) {
            headers.insert("x-forwarded-for", v);
        }
        if !headers.contains_key("x-forwarded-proto") {
            headers.insert("x-forwarded-proto", HeaderValue::from_static("http"));
        }
    }
}

/// How a failed body is reported to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Terminator {
    /// `{"error": "..."}\n` (what Ollama sends mid-stream).
    Ndjson,
    /// `data: {"error": {...}}\n\n` (OpenAI-style streams).
    Sse,
    /// Nothing can be appended: abort the connection.
    None,
}

impl Terminator {
    fn for_content_type(ct: Option<&HeaderValue>) -> Self {
        let ct = ct.and_then(|v| v.to_str().ok()).unwrap_or("");
        if ct.starts_with("application/x-ndjson") {
            Terminator::Ndjson
        } else if ct.starts_with("text/event-stream") {
            Terminator::Sse
        } else {
            Terminator::None
        }
    }

    fn line(self, message: &str) -> Option<Bytes> {
        match self {
            Terminator::Ndjson => Some(crate::error::error_line(message)),
            Terminator::Sse => {
                let body = crate::error::error_body(
                    http::StatusCode::BAD_GATEWAY,
                    message,
                    crate::error::Flavor::OpenAi,
                );
                Some(Bytes::from(format!("data: {body}\n\n")))
            }
            Terminator::None => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Streaming,
    Done,
}

pin_project_lite::pin_project! {
    /// The upstream body, passed through frame by frame, plus: an idle
    /// timeout between frames, an error line instead of a silent cut, and
    /// upstream timing.
    struct GuardedBody {
        #[pin]
        inner: Body,
        terminator: Terminator,
        idle_timeout: Duration,
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
        state: State,
        timing: Option<Arc<Timing>>,
        started: Instant,
    }
}

impl HttpBody for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if *this.state == State::Done {
            return Poll::Ready(None);
        }
        match this.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                *this.sleep = None;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                *this.state = State::Done;
                if let Some(t) = this.timing.as_ref() {
                    t.upstream_done(this.started.elapsed());
                }
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                *this.state = State::Done;
                if let Some(t) = this.timing.as_ref() {
                    t.upstream_done(this.started.elapsed());
                }
                tracing::warn!(error = %e, "upstream body failed mid-stream");
                metrics::counter!("augur_upstream_stream_errors_total").increment(1);
                finish_with(
                    *this.terminator,
                    "upstream connection closed before the response was complete",
                    e,
                )
            }
            Poll::Pending => {
                let idle = *this.idle_timeout;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        *this.state = State::Done;
                        let msg = format!("upstream stalled for {} ms", idle.as_millis());
                        finish_with(*this.terminator, &msg, axum::Error::new(msg.clone()))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.state == State::Done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

use std::future::Future as _;

fn finish_with(
    terminator: Terminator,
    message: &str,
    error: axum::Error,
) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
    match terminator.line(message) {
        Some(line) => Poll::Ready(Some(Ok(Frame::data(line)))),
        None => Poll::Ready(Some(Err(error))),
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
        let client = ClientInfo {
            ip: "192.168.1.2".parse().unwrap(),
        };
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
        assert_eq!(
            up.uri_for("/api/tags?x=1").unwrap().to_string(),
            "http://127.0.0.1:1/ollama/api/tags?x=1"
        );
    }
}
