//! Request ids, the access log line and request metrics.
//!
//! [`TelemetryLayer`] wraps every proxied request: it assigns `X-Request-Id` (the
//! client's own if sent), and when the response body has been fully sent it
//! writes one log line and records `augur_requests_total`,
//! `augur_request_duration_seconds`, `augur_upstream_duration_seconds` and
//! `augur_overhead_seconds` (total minus time waiting on the upstream),
//! and what augur did to it in the ring of recent events ([`events`]).
//! A model request's GenAI metrics are recorded with its token charge
//! ([`genai`]). With traces on it also opens the request's span
//! ([`spans`], exported by [`otel`]). [`log`] is the log output itself.

pub(crate) mod events;
pub(crate) mod genai;
mod layer;
pub(crate) mod log;
mod operation;
pub mod otel;
mod recorder;
pub(crate) mod spans;
mod timing;

pub(crate) use layer::{Telemetry, TelemetryLayer};
pub use recorder::install_metrics;
pub(crate) use timing::Timing;
pub(crate) use timing::rfc3339;
