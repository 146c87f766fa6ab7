//! The recent events the status page lists: the last [`CAPACITY`]
//! repairs, retries, fallbacks, refusals and low-confidence answers, with
//! request totals since start, also by how each request ended
//! ([`crate::ending`]).
//!
//! One place feeds it: the end of every proxied request
//! ([`super::layer`]), from the response's status and the `X-Augur-*`
//! headers that report what augur did (the pipeline's report). An event holds the time, the
//! request id, the principal, the model and a short detail (repair names,
//! attempt counts, the fallback model and why, the refusal's class):
//! never prompt or answer text, and every string is cut to a bound.
//! Repairs reported only in a stream's last chunk are not seen here.

use std::{
    collections::VecDeque,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};

use crate::ending::Ending;

/// Most events kept; older ones are dropped first.
pub const CAPACITY: usize = 100;
/// Longest request id, principal or model kept, in characters.
const MAX_NAME: usize = 96;
/// Longest detail kept, in characters.
const MAX_DETAIL: usize = 160;

/// What augur did to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Repair,
    Retry,
    Fallback,
    Refusal,
    /// An answer the model was less sure of than its policy's threshold.
    LowConfidence,
}

impl Kind {
    /// The name the snapshot uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Repair => "repair",
            Kind::Retry => "retry",
            Kind::Fallback => "fallback",
            Kind::Refusal => "refusal",
            Kind::LowConfidence => "low_confidence",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One recorded event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub at: SystemTime,
    pub request_id: String,
    pub principal: String,
    pub model: String,
    pub kind: Kind,
    pub detail: String,
}

/// The kinds of event a response reports, each with its detail (at most
/// one per kind); empty for most responses.
pub(crate) fn classify(status: StatusCode, headers: &HeaderMap) -> Vec<(Kind, String)> {
    let mut found = Vec::new();
    if let Some(refusal) = refusal(status) {
        found.push((Kind::Refusal, format!("{} {refusal}", status.as_u16())));
    }
    // Most answers carry no report: one pass over the names, none looked
    // up by text.
    let reports = headers
        .keys()
        .any(|name| name.as_str().starts_with("x-augur-"));
    if !reports {
        return found;
    }
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(repaired) = text("x-augur-repaired") {
        found.push((Kind::Repair, repaired.to_string()));
    }
    if let Some(n) = text("x-augur-attempts").and_then(|n| n.parse::<u32>().ok())
        && n > 1
    {
        found.push((Kind::Retry, format!("{n} attempts")));
    }
    if let (Some(value), Some(below)) =
        (text("x-augur-confidence"), text("x-augur-confidence-below"))
    {
        found.push((Kind::LowConfidence, format!("{value} < {below}")));
    }
    match (text("x-augur-fallback"), text("x-augur-model")) {
        (Some(reason), Some(model)) => {
            found.push((Kind::Fallback, format!("answered by {model} ({reason})")))
        }
        (Some(reason), None) => found.push((Kind::Fallback, format!("fallback {reason}"))),
        _ => {}
    }
    found
}

/// The class of a refused request, by its status.
fn refusal(status: StatusCode) -> Option<&'static str> {
    Some(match status.as_u16() {
        401 => "unauthenticated",
        403 => "forbidden",
        422 => "answer rejected",
        429 => "rate limited",
        _ => return None,
    })
}

/// The ring of recent events and the totals since start.
#[derive(Debug, Default)]
pub(crate) struct Events {
    ring: Mutex<VecDeque<Event>>,
    requests: AtomicU64,
    by_kind: [AtomicU64; 5],
    by_ending: [AtomicU64; Ending::ALL.len()],
}

/// `text` cut to `max` characters.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

impl Events {
    /// A request ended, as `ending` says.
    pub(crate) fn request_ended(&self, ending: Ending) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.by_ending[ending.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Record one event; the oldest goes once [`CAPACITY`] are kept.
    pub(crate) fn record(
        &self,
        kind: Kind,
        request_id: &str,
        principal: &str,
        model: &str,
        detail: &str,
    ) {
        self.by_kind[kind.index()].fetch_add(1, Ordering::Relaxed);
        let event = Event {
            at: SystemTime::now(),
            request_id: cut(request_id, MAX_NAME),
            principal: cut(principal, MAX_NAME),
            model: cut(model, MAX_NAME),
            kind,
            detail: cut(detail, MAX_DETAIL),
        };
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        while ring.len() >= CAPACITY {
            ring.pop_front();
        }
        ring.push_back(event);
    }

    /// The events kept, newest first.
    pub(crate) fn recent(&self) -> Vec<Event> {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        ring.iter().rev().cloned().collect()
    }

    /// Requests ended since start, by how they ended, and events
    /// recorded per kind.
    pub(crate) fn totals_json(&self) -> Value {
        let n = |k: Kind| self.by_kind[k.index()].load(Ordering::Relaxed);
        let endings: Map<String, Value> = Ending::ALL
            .iter()
            .map(|e| {
                let count = self.by_ending[e.index()].load(Ordering::Relaxed);
                (e.as_str().to_string(), Value::from(count))
            })
            .collect();
        json!({
            "requests": self.requests.load(Ordering::Relaxed),
            "endings": endings,
            "repairs": n(Kind::Repair),
            "retries": n(Kind::Retry),
            "fallbacks": n(Kind::Fallback),
            "refusals": n(Kind::Refusal),
            "low_confidence": n(Kind::LowConfidence),
        })
    }

    /// The events kept, newest first, as the snapshot shows them.
    pub(crate) fn recent_json(&self) -> Value {
        let events: Vec<Value> = self
            .recent()
            .into_iter()
            .map(|e| {
                json!({
                    "at": super::timing::rfc3339(e.at),
                    "request_id": e.request_id,
                    "principal": e.principal,
                    "model": e.model,
                    "kind": e.kind.as_str(),
                    "detail": e.detail,
                })
            })
            .collect();
        Value::Array(events)
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
