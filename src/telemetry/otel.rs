//! OpenTelemetry traces: the OTLP/HTTP exporter, a bounded export queue,
//! the layer that turns augur's trace spans into OpenTelemetry spans, and
//! W3C trace context in and out.
//!
//! The spans themselves are plain `tracing` spans of target
//! [`TARGET`] (see [`super::spans`]); nothing else
//! in augur names an OpenTelemetry type. Without an endpoint no layer is
//! installed: those spans are then disabled at their call sites, and a
//! client's `traceparent` goes upstream as it came.
//!
//! Export never holds a request up: finished spans wait in a queue of
//! `queue_size` for the SDK's batch processor thread; when the collector
//! is slow or down and the queue is full, spans are dropped and counted in
//! `augur_trace_spans_dropped_total` (looked up at each drop: the exporter
//! is built before the metrics recorder is installed, and a handle taken
//! then would count nowhere).

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapPropagator},
    trace::{TraceContextExt as _, TracerProvider as _},
};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    propagation::TraceContextPropagator,
    trace::{
        BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter,
        SpanProcessor,
    },
};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{Layer, filter::Targets, registry::LookupSpan};

use crate::config::TraceSettings;

/// The target of every trace span; the only target the trace layer takes,
/// and one the log output leaves out.
pub const TARGET: &str = "augur::trace";

/// Set once a trace layer is installed: only then are trace headers
/// read from clients and written upstream.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether traces are exported (a trace layer was installed).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Why traces cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[error("cannot export traces: {0}")]
pub struct TraceError(String);

/// A tracer provider exporting over OTLP/HTTP (protobuf) as `settings`
/// say, through a bounded queue.
pub fn otlp_provider(settings: &TraceSettings) -> Result<SdkTracerProvider, TraceError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(settings.endpoint.clone())
        .with_timeout(settings.export_timeout)
        .with_headers(settings.headers.iter().cloned().collect())
        .build()
        .map_err(|e| TraceError(e.to_string()))?;
    Ok(provider(exporter, settings))
}

/// A tracer provider exporting through `exporter`, its spans queued as
/// `settings` say (`service.name` from `OTEL_SERVICE_NAME` or
/// `OTEL_RESOURCE_ATTRIBUTES` when either names it).
pub fn provider<E: SpanExporter + 'static>(
    exporter: E,
    settings: &TraceSettings,
) -> SdkTracerProvider {
    let pending = Arc::new(AtomicUsize::new(0));
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(settings.queue_size)
        .with_max_export_batch_size(settings.queue_size.min(512))
        .build();
    let inner = BatchSpanProcessor::builder(Counted {
        inner: exporter,
        pending: pending.clone(),
    })
    .with_batch_config(batch)
    .build();
    // `service.name` from the environment wins, as the SDK reads it.
    let named_by_env = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    let mut resource = Resource::builder();
    if !named_by_env {
        resource = resource.with_service_name(settings.service_name.clone());
    }
    // The sampler is the SDK's: `OTEL_TRACES_SAMPLER` / `_ARG`, else
    // parent-based, always on.
    SdkTracerProvider::builder()
        .with_resource(resource.build())
        .with_span_processor(Bounded {
            inner,
            pending,
            capacity: settings.queue_size,
        })
        .build()
}

/// The layer that exports augur's trace spans through `provider`;
/// installing it turns trace context on.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl Layer<S> + use<S>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    ENABLED.store(true, Ordering::Relaxed);
    let tracer = provider.tracer("augur");
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_level(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO))
}

/// Continue the client's trace (`traceparent`, `tracestate`) in `span`.
pub(crate) fn continue_trace(span: &tracing::Span, headers: &HeaderMap) {
    if !enabled() || !headers.contains_key(TRACEPARENT) {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    let _ = span.set_parent(parent);
}

/// Rename `span` (its name is fixed once it has started: a child span
/// or its trace context starts it).
pub(crate) fn rename(span: &tracing::Span, name: String) {
    if !enabled() || span.is_disabled() {
        return;
    }
    span.context().span().update_name(name);
}

/// Write the current span's trace context into `headers` (a request
/// going upstream), in place of the client's; nothing when traces are off.
pub(crate) fn inject_current(headers: &mut HeaderMap) {
    if !enabled() {
        return;
    }
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    let cx: Context = span.context();
    if !cx.has_active_span() {
        return;
    }
    headers.remove(TRACESTATE);
    TraceContextPropagator::new().inject_context(&cx, &mut HeadersMut(headers));
}

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";

struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The batch processor with a bound of its own on spans not yet handed to
/// the exporter: past it a span is dropped and counted (the batch
/// processor drops silently). The bound is the batch queue's size, so the
/// batch queue itself never fills.
#[derive(Debug)]
struct Bounded {
    inner: BatchSpanProcessor,
    pending: Arc<AtomicUsize>,
    capacity: usize,
}

/// Show `augur_trace_spans_dropped_total` at 0 from the start (once the
/// metrics recorder is installed), so that its rate can be read before the
/// first drop.
pub fn count_drops_from_zero() {
    metrics::counter!("augur_trace_spans_dropped_total").increment(0);
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.pending.fetch_add(1, Ordering::AcqRel) >= self.capacity {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            // The recorder in force now (see the module's doc).
            metrics::counter!("augur_trace_spans_dropped_total").increment(1);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, counting spans out of [`Bounded`]'s bound as each batch
/// is handed to it.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    pending: Arc<AtomicUsize>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        self.pending.fetch_sub(batch.len(), Ordering::AcqRel);
        self.inner.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
