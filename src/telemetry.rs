//! Request ids, the access log line and request metrics.
//!
//! [`layer`] wraps every proxied request: it assigns `X-Request-Id` (the
//! client's own if sent), and when the response body has been fully sent it
//! writes one log line and records `augur_requests_total`,
//! `augur_request_duration_seconds`, `augur_upstream_duration_seconds` and
//! `augur_overhead_seconds` (total minus time waiting on the upstream).

use std::{
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::{body::Body, extract::Request, middleware::Next, response::Response};
use bytes::Bytes;
use http::{HeaderValue, header::HeaderName};
use http_body::{Body as HttpBody, Frame, SizeHint};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// `X-Request-Id`.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Install the Prometheus recorder; returns the handle `/metrics` renders.
pub fn install_metrics() -> Result<PrometheusHandle, String> {
    let buckets = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    ];
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_string()), &buckets)
        .map_err(|e| e.to_string())?
        .install_recorder()
        .map_err(|e| e.to_string())
}

/// Per-request timing and labels, shared between the stages of one request.
#[derive(Debug, Default)]
pub struct Timing {
    upstream_headers_ns: AtomicU64,
    upstream_total_ns: AtomicU64,
    labels: Mutex<Labels>,
}

/// What the access log knows about a request beyond method and path.
#[derive(Debug, Default, Clone)]
pub struct Labels {
    pub model: Option<String>,
    pub principal: Option<String>,
    pub note: Option<&'static str>,
}

impl Timing {
    /// Upstream response headers arrived after `d`.
    pub fn upstream_headers(&self, d: Duration) {
        self.upstream_headers_ns
            .store(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The upstream body ended after `d` (cumulative over retries).
    pub fn upstream_done(&self, d: Duration) {
        self.upstream_total_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Record the model a request is for.
    pub fn set_model(&self, model: &str) {
        if let Ok(mut l) = self.labels.lock() {
            l.model = Some(model.to_string());
        }
    }

    /// Record who sent the request (an API key id or "anonymous").
    pub fn set_principal(&self, principal: &str) {
        if let Ok(mut l) = self.labels.lock() {
            l.principal = Some(principal.to_string());
        }
    }

    /// Record what augur did to the request (e.g. "emulated_tools").
    pub fn set_note(&self, note: &'static str) {
        if let Ok(mut l) = self.labels.lock() {
            l.note = Some(note);
        }
    }

    fn upstream(&self) -> Duration {
        let total = self.upstream_total_ns.load(Ordering::Relaxed);
        let headers = self.upstream_headers_ns.load(Ordering::Relaxed);
        Duration::from_nanos(total.max(headers))
    }

    fn labels(&self) -> Labels {
        self.labels.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// A low-cardinality route label for a path.
pub fn route_label(path: &str) -> &'static str {
    const KNOWN: [&str; 28] = [
        "/",
        "/api/version",
        "/api/status",
        "/api/tags",
        "/api/ps",
        "/api/show",
        "/api/chat",
        "/api/generate",
        "/api/embed",
        "/api/embeddings",
        "/api/pull",
        "/api/push",
        "/api/create",
        "/api/copy",
        "/api/delete",
        "/api/me",
        "/api/signout",
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/embeddings",
        "/v1/models",
        "/v1/responses",
        "/v1/messages",
        "/v1/audio/transcriptions",
        "/api/experimental/web_search",
        "/api/experimental/web_fetch",
        "/api/experimental/model-recommendations",
        "/api/blobs/:digest",
    ];
    if let Some(k) = KNOWN.iter().find(|k| **k == path) {
        return k;
    }
    if path.starts_with("/api/blobs/") {
        "/api/blobs/:digest"
    } else if path.starts_with("/v1/models/") {
        "/v1/models/:model"
    } else {
        "other"
    }
}

/// Middleware: request id, timing, access log and request metrics.
pub async fn layer(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .filter(|v| !v.is_empty() && v.len() <= 200)
        .cloned()
        .unwrap_or_else(|| {
            let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
            let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
            HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("-"))
        });
    req.headers_mut().insert(REQUEST_ID.clone(), id.clone());
    let timing = Arc::new(Timing::default());
    req.extensions_mut().insert(timing.clone());
    let method = req.method().clone();
    let route = route_label(req.uri().path());

    let response = next.run(req).await;
    let (mut parts, body) = response.into_parts();
    parts.headers.insert(REQUEST_ID.clone(), id.clone());
    let status = parts.status.as_u16();
    let done = Finish {
        started,
        timing,
        method,
        route,
        status,
        request_id: id,
    };
    let streaming = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.starts_with("application/x-ndjson") || ct.starts_with("text/event-stream")
        });
    if streaming {
        metrics::gauge!("augur_streams_in_flight").increment(1.0);
    }
    let body = ObservedBody {
        inner: body,
        finish: Some(done),
        streaming,
    };
    Response::from_parts(parts, Body::new(body))
}

struct Finish {
    started: Instant,
    timing: Arc<Timing>,
    method: http::Method,
    route: &'static str,
    status: u16,
    request_id: HeaderValue,
}

/// Metric handles of one (route, status), registered once per worker
/// thread instead of being looked up by name and labels per request.
#[derive(Clone)]
struct RouteMetrics {
    requests: metrics::Counter,
    duration: metrics::Histogram,
    upstream: metrics::Histogram,
    overhead: metrics::Histogram,
}

thread_local! {
    static ROUTE_METRICS: std::cell::RefCell<std::collections::HashMap<(&'static str, u16), RouteMetrics>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn route_metrics(route: &'static str, status: u16) -> RouteMetrics {
    ROUTE_METRICS.with(|cache| {
        cache
            .borrow_mut()
            .entry((route, status))
            .or_insert_with(|| RouteMetrics {
                requests: metrics::counter!("augur_requests_total", "route" => route, "status" => status.to_string()),
                duration: metrics::histogram!("augur_request_duration_seconds", "route" => route),
                upstream: metrics::histogram!("augur_upstream_duration_seconds", "route" => route),
                overhead: metrics::histogram!("augur_overhead_seconds", "route" => route),
            })
            .clone()
    })
}

impl Finish {
    fn record(self, outcome: &'static str) {
        let total = self.started.elapsed();
        let upstream = self.timing.upstream();
        let overhead = total.saturating_sub(upstream);
        let m = route_metrics(self.route, self.status);
        m.requests.increment(1);
        m.duration.record(total.as_secs_f64());
        if !upstream.is_zero() {
            m.upstream.record(upstream.as_secs_f64());
        }
        m.overhead.record(overhead.as_secs_f64());
        if !tracing::enabled!(target: "augur::access", tracing::Level::INFO) {
            return;
        }
        let labels = self.timing.labels();
        tracing::info!(
            target: "augur::access",
            request_id = self.request_id.to_str().unwrap_or("-"),
            method = %self.method,
            route = self.route,
            status = self.status,
            model = labels.model.as_deref().unwrap_or("-"),
            principal = labels.principal.as_deref().unwrap_or("-"),
            note = labels.note.unwrap_or("-"),
            outcome,
            total_ms = total.as_secs_f64() * 1000.0,
            upstream_ms = upstream.as_secs_f64() * 1000.0,
            overhead_ms = overhead.as_secs_f64() * 1000.0,
            "request"
        );
    }
}

pin_project_lite::pin_project! {
    /// The response body, observed: logs and records metrics when the last
    /// byte has been handed to the connection (or the client went away).
    struct ObservedBody {
        #[pin]
        inner: Body,
        finish: Option<Finish>,
        streaming: bool,
    }

    impl PinnedDrop for ObservedBody {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(finish) = this.finish.take() {
                if *this.streaming {
                    metrics::gauge!("augur_streams_in_flight").decrement(1.0);
                }
                let outcome = if this.inner.is_end_stream() { "complete" } else { "client_closed" };
                finish.record(outcome);
            }
        }
    }
}

impl HttpBody for ObservedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None) => Some("complete"),
            Poll::Ready(Some(Err(_))) => Some("error"),
            _ => None,
        };
        // Take the record only once the body has ended: taking it on every
        // poll would drop it, unrecorded, at the first data frame.
        if let Some(outcome) = ended
            && let Some(finish) = this.finish.take()
        {
            if *this.streaming {
                metrics::gauge!("augur_streams_in_flight").decrement(1.0);
            }
            finish.record(outcome);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The access log record survives data frames and is written when the
    /// body ends.
    #[tokio::test]
    async fn the_record_is_kept_until_the_body_ends() {
        use http_body_util::BodyExt;

        let chunks = futures_util::stream::iter(["a", "b"].map(Ok::<_, std::io::Error>));
        let mut body = Box::pin(ObservedBody {
            inner: Body::from_stream(chunks),
            finish: Some(Finish {
                started: Instant::now(),
                timing: Arc::default(),
                method: http::Method::POST,
                route: "/api/chat",
                status: 200,
                request_id: HeaderValue::from_static("-"),
            }),
            streaming: true,
        });
        for _ in 0..2 {
            assert!(body.frame().await.unwrap().unwrap().is_data());
            assert!(body.finish.is_some(), "recorded before the end");
        }
        assert!(body.frame().await.is_none());
        assert!(body.finish.is_none(), "recorded at the end");
    }

    #[test]
    fn routes_have_low_cardinality_labels() {
        assert_eq!(route_label("/api/chat"), "/api/chat");
        assert_eq!(route_label("/api/blobs/sha256:abc"), "/api/blobs/:digest");
        assert_eq!(route_label("/v1/models/llama3"), "/v1/models/:model");
        assert_eq!(route_label("/some/new/endpoint"), "other");
    }
}
