//! The telemetry service around every proxied request.
//!
//! It assigns `X-Request-Id` (the client's own if sent), puts the request's
//! [`Timing`] in its extensions, and wraps the response body so that when
//! the last byte has been handed to the connection (or the client went
//! away) one access log line is written and the request metrics recorded,
//! with how the request ended ([`crate::ending`], decided here).
//! A tower layer with its own future rather than a boxed middleware
//! function: it runs on every request.

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use axum::{body::Body, extract::Request, response::Response};
use bytes::Bytes;
use http::HeaderValue;
use http_body::{Body as HttpBody, Frame, SizeHint};

use tracing::{Instrument, instrument::Instrumented};

use super::{
    events::Events,
    otel, spans,
    timing::{REQUEST_ID, Timing},
};
use crate::ending::{BodyEnd, Ending};

/// The metric label of a canonical request path (the route table's).
pub(super) type RouteLabel = fn(&str) -> &'static str;

/// Wraps a service in [`Telemetry`].
#[derive(Debug, Clone)]
pub(crate) struct TelemetryLayer {
    label: RouteLabel,
    events: Arc<Events>,
}

impl TelemetryLayer {
    /// Telemetry whose request metrics name routes by `label`, recording
    /// what augur did into `events`.
    pub(crate) fn new(label: RouteLabel, events: Arc<Events>) -> Self {
        Self { label, events }
    }
}

impl<S> tower::Layer<S> for TelemetryLayer {
    type Service = Telemetry<S>;

    fn layer(&self, inner: S) -> Telemetry<S> {
        Telemetry {
            inner,
            label: self.label,
            events: self.events.clone(),
        }
    }
}

/// Request id, timing, access log and request metrics around `S`.
#[derive(Debug, Clone)]
pub struct Telemetry<S> {
    inner: S,
    label: RouteLabel,
    events: Arc<Events>,
}

impl<S> tower::Service<Request> for Telemetry<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response<ObservedBody>;
    type Error = Infallible;
    type Future = TelemetryFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let started = Instant::now();
        let id = req
            .headers()
            .get(&REQUEST_ID)
            .filter(|v| !v.is_empty() && v.len() <= 200)
            .cloned()
            .unwrap_or_else(new_request_id);
        req.headers_mut().insert(REQUEST_ID.clone(), id.clone());
        let route = label_of(self.label, req.uri().path());
        let span = spans::request(
            req.method(),
            route,
            req.uri().path(),
            id.to_str().unwrap_or("-"),
        );
        otel::continue_trace(&span, req.headers());
        let timing = Arc::new(Timing::traced(span.clone(), route));
        req.extensions_mut().insert(timing.clone());
        let finish = Finish {
            started,
            timing,
            method: req.method().clone(),
            route,
            status: 0,
            reported: None,
            request_id: id,
            streaming: false,
            events: Vec::new(),
            ring: self.events.clone(),
        };
        TelemetryFuture {
            inner: self.inner.call(req).instrument(span),
            finish: Some(finish),
        }
    }
}

/// The route label of a raw request path, as admission will route it.
fn label_of(label: RouteLabel, path: &str) -> &'static str {
    use crate::wire::path;
    if path::is_canonical(path) {
        return label(path);
    }
    path::canonical(path).map_or("other", |p| label(&p))
}

fn new_request_id() -> HeaderValue {
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
    HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("-"))
}

pin_project_lite::pin_project! {
    /// The inner service's response, with the request id added and the
    /// body observed.
    pub struct TelemetryFuture<F> {
        #[pin]
        inner: Instrumented<F>,
        finish: Option<Finish>,
    }
}

impl<F> Future for TelemetryFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response<ObservedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = match this.inner.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(response)) => response,
            Poll::Ready(Err(never)) => match never {},
        };
        let Some(mut finish) = this.finish.take() else {
            // Polled again after completing: not something a caller does.
            return Poll::Ready(Ok(response.map(|inner| ObservedBody {
                inner,
                finish: None,
            })));
        };
        let (mut parts, body) = response.into_parts();
        parts
            .headers
            .insert(REQUEST_ID.clone(), finish.request_id.clone());
        finish.status = parts.status.as_u16();
        // An error response of augur's own says how it ends.
        finish.reported = parts.extensions.get::<Ending>().copied();
        finish.events = super::events::classify(parts.status, &parts.headers);
        finish.streaming =
            crate::wire::content::BodyKind::of(parts.headers.get(http::header::CONTENT_TYPE))
                .is_stream();
        if finish.streaming {
            STREAMS_IN_FLIGHT.with(|g| g.increment(1.0));
        }
        let body = ObservedBody {
            inner: body,
            finish: Some(finish),
        };
        Poll::Ready(Ok(Response::from_parts(parts, body)))
    }
}

struct Finish {
    started: Instant,
    timing: Arc<Timing>,
    method: http::Method,
    route: &'static str,
    status: u16,
    /// The ending the response carried (an error response of augur's).
    reported: Option<Ending>,
    request_id: HeaderValue,
    /// An NDJSON / SSE response, counted in `augur_streams_in_flight`.
    streaming: bool,
    /// What the response reports augur did (see [`super::events`]).
    events: Vec<(super::events::Kind, String)>,
    /// Where they are kept.
    ring: Arc<Events>,
}

/// Metric handles of one (route, status, ending), registered once per
/// worker thread instead of being looked up by name and labels per
/// request.
struct RouteMetrics {
    requests: metrics::Counter,
    duration: metrics::Histogram,
    upstream: metrics::Histogram,
    overhead: metrics::Histogram,
}

thread_local! {
    static STREAMS_IN_FLIGHT: metrics::Gauge = metrics::gauge!("augur_streams_in_flight");
    static ROUTE_METRICS: std::cell::RefCell<std::collections::HashMap<(&'static str, u16, Ending), RouteMetrics>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Run `f` with the metric handles of (route, status, ending), registered
/// on first use.
fn with_route_metrics(
    route: &'static str,
    status: u16,
    ending: Ending,
    f: impl FnOnce(&RouteMetrics),
) {
    ROUTE_METRICS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let m = cache
            .entry((route, status, ending))
            .or_insert_with(|| RouteMetrics {
                requests: metrics::counter!("augur_requests_total", "route" => route,
                "status" => status.to_string(), "ending" => ending.as_str()),
                duration: metrics::histogram!("augur_request_duration_seconds", "route" => route),
                upstream: metrics::histogram!("augur_upstream_duration_seconds", "route" => route),
                overhead: metrics::histogram!("augur_overhead_seconds", "route" => route),
            });
        f(m);
    })
}

impl Finish {
    fn record(self, body: BodyEnd) {
        if self.streaming {
            STREAMS_IN_FLIGHT.with(|g| g.decrement(1.0));
        }
        let total = self.started.elapsed();
        let upstream = self.timing.upstream();
        let overhead = total.saturating_sub(upstream);
        let reported = self.timing.reported_ending().or(self.reported);
        let ending = crate::ending::decide(reported, body, self.status);
        spans::record_end(self.timing.trace(), self.status, ending);
        with_route_metrics(self.route, self.status, ending, |m| {
            m.requests.increment(1);
            m.duration.record(total.as_secs_f64());
            if !upstream.is_zero() {
                m.upstream.record(upstream.as_secs_f64());
            }
            m.overhead.record(overhead.as_secs_f64());
        });
        self.record_events(ending);
        if !super::recorder::access_log_enabled() {
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
            fallback = labels.fallback.as_deref().unwrap_or("-"),
            outcome = ending.as_str(),
            total_ms = total.as_secs_f64() * 1000.0,
            upstream_ms = upstream.as_secs_f64() * 1000.0,
            overhead_ms = overhead.as_secs_f64() * 1000.0,
            "request"
        );
    }
}

impl Finish {
    /// Count the request, and keep what augur did to it among the recent
    /// events.
    fn record_events(&self, ending: Ending) {
        let events = &self.ring;
        events.request_ended(ending);
        if self.events.is_empty() {
            return;
        }
        let (model, principal) = self.timing.names();
        let id = self.request_id.to_str().unwrap_or("-");
        for (kind, detail) in &self.events {
            events.record(
                *kind,
                id,
                principal.as_deref().unwrap_or("-"),
                model.as_deref().unwrap_or("-"),
                detail,
            );
        }
    }
}

pin_project_lite::pin_project! {
    /// The response body, observed: logs and records metrics when the last
    /// byte has been handed to the connection (or the client went away).
    pub struct ObservedBody {
        #[pin]
        inner: Body,
        finish: Option<Finish>,
    }

    impl PinnedDrop for ObservedBody {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(finish) = this.finish.take() {
                let body = if this.inner.is_end_stream() { BodyEnd::Whole } else { BodyEnd::Dropped };
                finish.record(body);
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
            Poll::Ready(None) => Some(BodyEnd::Whole),
            Poll::Ready(Some(Err(_))) => Some(BodyEnd::Failed),
            _ => None,
        };
        // Take the record only once the body has ended: taking it on every
        // poll would drop it, unrecorded, at the first data frame.
        if let Some(body) = ended
            && let Some(finish) = this.finish.take()
        {
            finish.record(body);
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
#[path = "layer_tests.rs"]
mod tests;
