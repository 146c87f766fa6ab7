//! One request's timing and labels, shared between its stages, and its
//! id header.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU8, AtomicU64, Ordering},
    },
    time::Duration,
};

use http::header::HeaderName;

use super::{recorder::access_log_enabled, spans};
use crate::ending::Ending;

/// `X-Request-Id`.
pub(crate) static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Per-request timing and labels, shared between the stages of one request.
/// The model and principal are always kept (the recent events name
/// them); the other labels only while the access log is on.
#[derive(Debug)]
pub struct Timing {
    /// Time spent on the upstream, summed over every call (see
    /// [`Timing::upstream_time`]).
    upstream_ns: AtomicU64,
    /// How the request ended, when something other than its response's
    /// status says so: 0 = nothing reported, else 1 + the ending's index.
    ending: AtomicU8,
    labels: Mutex<Labels>,
    /// The upstream the last call went to (a configured name).
    upstream: Mutex<Option<Arc<str>>>,
    /// The request's trace span (disabled when traces are off).
    trace: tracing::Span,
    /// The request's canonical route, for the span's name.
    route: &'static str,
}

impl Default for Timing {
    fn default() -> Self {
        Self::traced(tracing::Span::none(), "other")
    }
}

/// What the access log knows about a request beyond method and path.
#[derive(Debug, Default, Clone)]
pub(crate) struct Labels {
    pub model: Option<String>,
    pub principal: Option<String>,
    pub note: Option<&'static str>,
    /// The fallback model that answered, and why.
    pub fallback: Option<String>,
}

impl Timing {
    /// Timing of a request on `route` traced by `trace`.
    pub fn traced(trace: tracing::Span, route: &'static str) -> Self {
        Self {
            upstream_ns: AtomicU64::new(0),
            ending: AtomicU8::new(0),
            labels: Mutex::default(),
            upstream: Mutex::default(),
            trace,
            route,
        }
    }

    /// The request's trace span (disabled when traces are off): the
    /// stages record what they learn in it.
    pub fn trace(&self) -> &tracing::Span {
        &self.trace
    }

    /// `d` more spent on the upstream. Upstream time is, for each call,
    /// from sending the request to the last byte of the answer received
    /// (or to giving up on it), summed over every call the request made
    /// (retries, re-asks, fallbacks); each call adds to it as its bytes
    /// arrive. The rest of the request's time is augur's own (overhead).
    pub fn upstream_time(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.upstream_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Report how the request ended where its response cannot say so (a
    /// stream the upstream cut or that stalled after it began); the last
    /// report stands. See [`crate::ending::decide`].
    pub fn report_ending(&self, ending: Ending) {
        self.ending
            .store(ending.index() as u8 + 1, Ordering::Relaxed);
    }

    /// The ending reported, if any.
    pub(super) fn reported_ending(&self) -> Option<Ending> {
        match self.ending.load(Ordering::Relaxed) {
            0 => None,
            n => Ending::from_index(usize::from(n) - 1),
        }
    }

    /// Report the ending of a stream that stopped on `error` (its error
    /// line or event was the last thing sent).
    pub fn report_error(&self, error: &crate::error::ProxyError) {
        self.report_ending(error.ending());
    }

    /// Record the model a request is for.
    pub fn set_model(&self, model: &str) {
        spans::name_for_model(&self.trace, self.route, model);
        if let Ok(mut l) = self.labels.lock() {
            l.model = Some(model.to_string());
        }
    }

    /// Record who sent the request (an API key id or "anonymous").
    pub fn set_principal(&self, principal: &str) {
        if !self.trace.is_disabled() {
            self.trace.record("augur.principal", principal);
        }
        if let Ok(mut l) = self.labels.lock() {
            l.principal = Some(principal.to_string());
        }
    }

    /// Record what augur did to the request (e.g. "emulated_tools").
    pub fn set_note(&self, note: &'static str) {
        if !self.trace.is_disabled() {
            self.trace.record("augur.note", note);
        }
        if let Ok(mut l) = self.labels.lock() {
            l.note = Some(note);
        }
    }

    /// Record that a fallback model answered (`model (reason)`).
    pub fn set_fallback(&self, what: String) {
        if !self.trace.is_disabled() {
            self.trace.record("augur.fallback", what.as_str());
        }
        if !access_log_enabled() {
            return;
        }
        if let Ok(mut l) = self.labels.lock() {
            l.fallback = Some(what);
        }
    }

    /// Record the upstream a call is sent to (each call overwrites: the
    /// last is the one that answered).
    pub fn set_upstream(&self, name: &Arc<str>) {
        if let Ok(mut u) = self.upstream.lock() {
            *u = Some(name.clone());
        }
    }

    /// The upstream the last call went to.
    pub fn upstream_label(&self) -> Option<Arc<str>> {
        self.upstream.lock().ok().and_then(|u| u.clone())
    }

    pub(super) fn upstream(&self) -> Duration {
        Duration::from_nanos(self.upstream_ns.load(Ordering::Relaxed))
    }

    /// The model and principal recorded, if any.
    pub(super) fn names(&self) -> (Option<String>, Option<String>) {
        self.labels
            .lock()
            .map(|l| (l.model.clone(), l.principal.clone()))
            .unwrap_or_default()
    }

    pub(super) fn labels(&self) -> Labels {
        self.labels.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// `t` as RFC 3339 (empty if it cannot be written).
pub(crate) fn rfc3339(t: std::time::SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
