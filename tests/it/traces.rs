//! Traces: a request is one trace (the client's, when it sends
//! `traceparent`), with spans for admission, each upstream request, each
//! attempt and retry, and each fallback model, carrying GenAI attributes;
//! the upstream receives the trace context of the request sent to it. A
//! collector that is down or hangs neither fails nor slows requests: spans
//! past the queue are dropped and counted.
//!
//! Each test installs the trace layer for its own thread only (a scoped
//! subscriber; the runtime of a `#[tokio::test]` runs augur's tasks on
//! it), exporting to the SDK's in-memory exporter or the OTLP one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use augur::{config::TraceSettings, otel};
use common::header;
use fake_ollama::FakeOllama;
use opentelemetry::{
    Value as AttrValue,
    trace::{SpanId, SpanKind, Status, TraceId},
};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// The trace layer on this thread, exporting to memory.
fn traced() -> (
    InMemorySpanExporter,
    SdkTracerProvider,
    tracing::subscriber::DefaultGuard,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = otel::provider(exporter.clone(), &TraceSettings::new("http://unused"));
    let guard = scoped(&provider);
    (exporter, provider, guard)
}

/// The process's global subscriber while these tests run: it takes no
/// span, but asks every callsite each time (`Interest::sometimes`). Without
/// it a callsite first reached by another test's thread, which has no
/// subscriber, may stay cached as "never", and this thread's scoped trace
/// layer would not see its spans.
struct AskEachTime;

impl tracing::Subscriber for AskEachTime {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn scoped(provider: &SdkTracerProvider) -> tracing::subscriber::DefaultGuard {
    static GLOBAL: std::sync::Once = std::sync::Once::new();
    GLOBAL.call_once(|| {
        // Fails only if a global subscriber is set already: then it decides.
        let _ = tracing::subscriber::set_global_default(AskEachTime);
    });
    let subscriber = tracing_subscriber::registry().with(otel::layer(provider));
    tracing::subscriber::set_default(subscriber)
}

/// The finished spans once the request span (kind server) has ended.
async fn spans(exporter: &InMemorySpanExporter, provider: &SdkTracerProvider) -> Vec<SpanData> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        provider.force_flush().unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        if spans.iter().any(|s| s.span_kind == SpanKind::Server) || Instant::now() > deadline {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match &kv.value {
            AttrValue::String(s) => s.to_string(),
            other => other.to_string(),
        })
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn children<'a>(spans: &'a [SpanData], parent: &SpanData) -> Vec<&'a SpanData> {
    let id = parent.span_context.span_id();
    spans.iter().filter(|s| s.parent_span_id == id).collect()
}

/// The one client span (an upstream request) under `parent`.
fn upstream_of<'a>(spans: &'a [SpanData], parent: &SpanData) -> &'a SpanData {
    let calls: Vec<_> = children(spans, parent)
        .into_iter()
        .filter(|s| s.span_kind == SpanKind::Client)
        .collect();
    assert_eq!(calls.len(), 1, "{:?} under {}", calls, parent.name);
    calls[0]
}

async fn scripted(model: &str, replies: &[&str]) -> FakeOllama {
    FakeOllama::builder()
        .models(&[])
        .script(model, replies.iter().map(|r| r.to_string()).collect())
        .start()
        .await
}

fn ask(model: &str) -> Value {
    json!({"model": model, "stream": false,
           "format": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
           "messages": [{"role": "user", "content": "a number"}]})
}

#[tokio::test]
async fn a_retried_then_fallen_back_request_is_one_trace_of_the_clients() {
    let (exporter, provider, _guard) = traced();
    let small = scripted("small", &["no", "still no"]).await;
    let big = scripted("big", &[r#"{"a":7}"#]).await;
    let augur = common::pair_under(
        &small,
        &big,
        "models:\n  small: {fallback: {models: [big]}}\n",
    )
    .await;
    let r = common::client()
        .post(format!("{}/api/chat", augur.url))
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .json(&ask("small"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), Some("big"));
    r.text().await.unwrap();
    let spans = spans(&exporter, &provider).await;

    let trace = TraceId::from_hex(CLIENT_TRACE).unwrap();
    assert!(
        spans.iter().all(|s| s.span_context.trace_id() == trace),
        "one trace, the client's: {spans:#?}"
    );
    let roots: Vec<_> = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Server)
        .collect();
    assert_eq!(roots.len(), 1, "{spans:#?}");
    let root = roots[0];
    assert_eq!(root.name, "chat small");
    assert_eq!(root.parent_span_id, SpanId::from_hex(CLIENT_SPAN).unwrap());
    assert!(root.parent_span_is_remote);
    assert_eq!(attr(root, "gen_ai.operation.name").as_deref(), Some("chat"));
    assert_eq!(attr(root, "gen_ai.request.model").as_deref(), Some("small"));
    assert_eq!(attr(root, "gen_ai.response.model").as_deref(), Some("big"));
    assert_eq!(attr(root, "augur.validation").as_deref(), Some("valid"));
    assert_eq!(
        attr(root, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert!(attr(root, "augur.fallback").is_some_and(|f| f.contains("big")));
    assert!(attr(root, "gen_ai.usage.output_tokens").is_some());

    let admission = named(&spans, "admission");
    assert_eq!(admission.len(), 1);
    assert_eq!(admission[0].parent_span_id, root.span_context.span_id());

    // The requested model: its attempt and its retry, each one upstream request.
    let attempts: Vec<_> = children(&spans, root)
        .into_iter()
        .filter(|s| s.name == "attempt")
        .collect();
    let retries = named(&spans, "retry");
    assert_eq!((attempts.len(), retries.len()), (1, 1), "{spans:#?}");
    for step in [attempts[0], retries[0]] {
        assert_eq!(attr(step, "gen_ai.request.model").as_deref(), Some("small"));
        assert_eq!(attr(step, "augur.validation").as_deref(), Some("invalid"));
        // Upstream requests name the model as routed (normalized).
        let call = upstream_of(&spans, step);
        assert_eq!(call.name, "chat small:latest");
        assert_eq!(
            attr(call, "gen_ai.request.model").as_deref(),
            Some("small:latest")
        );
        assert_eq!(attr(call, "server.address").as_deref(), Some("a"));
    }
    assert!(attr(retries[0], "augur.retry.cause").is_some());

    // The fallback model: its own attempt, one upstream request, valid.
    let fallback = named(&spans, "fallback");
    assert_eq!(fallback.len(), 1);
    assert_eq!(fallback[0].parent_span_id, root.span_context.span_id());
    assert_eq!(
        attr(fallback[0], "gen_ai.request.model").as_deref(),
        Some("big")
    );
    assert_eq!(
        attr(fallback[0], "augur.fallback.reason").as_deref(),
        Some("invalid")
    );
    let inner = children(&spans, fallback[0]);
    let attempt = inner.iter().find(|s| s.name == "attempt").expect("attempt");
    assert_eq!(attr(attempt, "augur.validation").as_deref(), Some("valid"));
    let call = upstream_of(&spans, attempt);
    assert_eq!(call.name, "chat big:latest");
    assert_eq!(attr(call, "server.address").as_deref(), Some("b"));

    // Each upstream got the trace context of the request sent to it.
    let sent = |fake: &FakeOllama| {
        let req = fake.last_request_to("/api/chat").unwrap();
        req.headers["traceparent"].to_str().unwrap().to_string()
    };
    let calls = named(&spans, "chat small:latest");
    let last_small = calls.iter().max_by_key(|s| s.start_time).unwrap();
    assert_eq!(
        sent(&small),
        format!("00-{CLIENT_TRACE}-{}-01", last_small.span_context.span_id())
    );
    assert_eq!(
        sent(&big),
        format!("00-{CLIENT_TRACE}-{}-01", call.span_context.span_id())
    );
    augur.stop().await;
}

#[tokio::test]
async fn a_request_without_trace_context_starts_a_trace() {
    let (exporter, provider, _guard) = traced();
    let (fake, augur) = common::pair().await;
    let r = common::client()
        .get(format!("{}/api/tags", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let spans = spans(&exporter, &provider).await;
    let root = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server)
        .expect("a request span");
    assert_eq!(root.parent_span_id, SpanId::INVALID);
    assert!(
        !spans
            .iter()
            .any(|s| s.span_context.trace_id() == TraceId::from_hex(CLIENT_TRACE).unwrap())
    );
    let call = upstream_of(&spans, root);
    let sent = fake.last_request().unwrap();
    let sent = sent.headers["traceparent"].to_str().unwrap();
    assert!(
        sent.contains(&call.span_context.span_id().to_string()),
        "{sent}"
    );
    augur.stop().await;
}

/// An upstream that refuses the connection: the upstream request's span
/// and the request's carry an error status.
#[tokio::test]
async fn a_failed_upstream_request_is_an_error_span() {
    let (exporter, provider, _guard) = traced();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let augur = common::start_with(&closed, |_| {}).await;
    let r = common::client()
        .get(format!("{}/api/tags", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    r.text().await.unwrap();
    let spans = spans(&exporter, &provider).await;
    let root = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server)
        .expect("a request span");
    assert!(matches!(root.status, Status::Error { .. }), "{root:#?}");
    assert_eq!(
        attr(root, "http.response.status_code").as_deref(),
        Some("502")
    );
    let call = upstream_of(&spans, root);
    assert!(
        matches!(&call.status, Status::Error { description } if !description.is_empty()),
        "{call:#?}"
    );
    augur.stop().await;
}

/// Without the trace layer a client's `traceparent` goes upstream as it came.
#[tokio::test]
async fn without_traces_the_clients_trace_context_passes_through() {
    let (fake, augur) = common::pair().await;
    let given = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let r = common::client()
        .post(format!("{}/api/chat", augur.url))
        .header("traceparent", &given)
        .header("tracestate", "vendor=1")
        .json(&json!({"model": "llama3.2", "stream": false, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let sent = fake.last_request_to("/api/chat").unwrap();
    assert_eq!(sent.headers["traceparent"].to_str().unwrap(), given);
    assert_eq!(sent.headers["tracestate"].to_str().unwrap(), "vendor=1");
    augur.stop().await;
}

/// A collector that refuses connections, and one that takes them and
/// never answers: requests are neither failed nor held up, and spans past
/// the queue are dropped and counted.
#[tokio::test]
async fn a_collector_down_neither_fails_nor_slows_requests() {
    let handle = common::metrics();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    // Accepts nothing: connections wait in its backlog, exports time out.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (fake, augur) = common::pair().await;
    for collector in [closed, hung.local_addr().unwrap()] {
        let settings = TraceSettings {
            queue_size: 4,
            export_timeout: Duration::from_secs(3),
            ..TraceSettings::new(format!("http://{collector}/v1/traces"))
        };
        let provider = otel::otlp_provider(&settings).unwrap();
        let guard = scoped(&provider);
        let dropped = || dropped(&handle.render());
        let before = dropped();
        let started = Instant::now();
        for _ in 0..40 {
            let one = Instant::now();
            let r = common::client()
                .get(format!("{}/api/tags", augur.url))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.text().await.unwrap();
            assert!(
                one.elapsed() < Duration::from_millis(500),
                "{:?} with the collector at {collector}",
                one.elapsed()
            );
        }
        assert!(started.elapsed() < Duration::from_secs(5));
        // 40 requests of 3 spans each, through a queue of 4, each export
        // taking the whole timeout.
        if collector != closed {
            assert!(dropped() > before, "no span dropped at {collector}");
        }
        drop(guard);
        let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
    }
    assert!(fake.requests("/api/tags") >= 80);
    augur.stop().await;
}

/// `augur_trace_spans_dropped_total` in a Prometheus text rendering.
fn dropped(text: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix("augur_trace_spans_dropped_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The `augur` binary, exporting to a collector that takes connections
/// and never answers through a queue of 16 spans: the spans it drops are
/// counted, from 0 on (its exporter is built before its metrics recorder).
#[tokio::test]
async fn the_binary_counts_the_spans_it_drops() {
    common::live::bounded(60, async {
        // Accepts nothing: connections wait in its backlog, exports time out.
        let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let config = format!(
            "[traces]\nendpoint = \"http://{}\"\nqueue_size = 16\nexport_timeout_ms = 10000\n",
            hung.local_addr().unwrap()
        );
        let fake = FakeOllama::builder().start().await;
        let augur = common::process::Process::start(common::process::Start {
            upstream: &fake.url(),
            config: Some(&config),
            ..Default::default()
        })
        .await;
        let url = format!("{}/metrics", augur.admin);
        let before = common::get_text(&url).await;
        assert!(
            before.contains("augur_trace_spans_dropped_total 0"),
            "{before}"
        );
        for _ in 0..40 {
            let r = common::client()
                .get(format!("{}/api/tags", augur.url))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.text().await.unwrap();
        }
        // 40 requests of 3 spans each: one batch of 16 goes to the hung
        // collector, 16 more wait, the rest are dropped.
        let after = common::get_text(&url).await;
        let dropped = dropped(&after);
        assert!(dropped >= 40.0, "{dropped} dropped:\n{after}");
    })
    .await;
}

/// A stream the upstream cut after its head: the request span says how
/// it ended (`augur.ending`) and carries an error status, though its
/// status was 200.
#[tokio::test]
async fn a_stream_the_upstream_cut_ends_its_span_as_cut() {
    let (exporter, provider, _guard) = traced();
    let (_fake, augur) = common::pair().await;
    let r = common::post(
        &augur,
        "/api/chat",
        &json!({"model": "stream-cut", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(text.contains("\"error\""), "{text}");
    let spans = spans(&exporter, &provider).await;
    let root = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server)
        .expect("a request span");
    assert_eq!(attr(root, "augur.ending").as_deref(), Some("upstream_cut"));
    assert_eq!(
        attr(root, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert!(matches!(root.status, Status::Error { .. }), "{root:#?}");
    augur.stop().await;
}
