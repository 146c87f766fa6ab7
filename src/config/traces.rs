//! Where traces go (`[traces]`, or the standard `OTEL_*` variables, which
//! win): off unless an OTLP endpoint is named.

use std::{collections::BTreeMap, time::Duration};

use serde::Deserialize;

use super::error::ConfigError;
use crate::wire::redact::without_userinfo;

/// The OTLP/HTTP path of traces under a base endpoint.
const TRACES_PATH: &str = "/v1/traces";

/// `[traces]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTraces {
    endpoint: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    service_name: Option<String>,
    queue_size: Option<usize>,
    export_timeout_ms: Option<u64>,
}

/// Traces exported over OTLP/HTTP (protobuf).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSettings {
    /// The full URL spans are posted to (`.../v1/traces`).
    pub endpoint: String,
    /// Headers of every export request (the config file's; the exporter
    /// adds `OTEL_EXPORTER_OTLP_HEADERS` itself).
    pub headers: Vec<(String, String)>,
    /// `service.name`, unless `OTEL_SERVICE_NAME` says otherwise.
    pub service_name: String,
    /// Finished spans waiting for export; more are dropped and counted.
    pub queue_size: usize,
    /// Longest one export request may take.
    pub export_timeout: Duration,
}

impl TraceSettings {
    /// The settings of `endpoint` with every other one at its default.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            headers: Vec::new(),
            service_name: "augur".to_string(),
            queue_size: 2048,
            export_timeout: Duration::from_secs(10),
        }
    }
}

/// The trace settings from the file and the environment (`env` reads one
/// variable); `None` when no endpoint is named or `OTEL_SDK_DISABLED` is
/// true.
pub(super) fn resolve(
    file: FileTraces,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<TraceSettings>, ConfigError> {
    let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let endpoint = match (
        env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        env("OTEL_EXPORTER_OTLP_ENDPOINT"),
        file.endpoint.filter(|e| !e.trim().is_empty()),
    ) {
        // The signal's own endpoint is used as it is.
        (Some(traces), _, _) => traces,
        (None, Some(base), _) | (None, None, Some(base)) => with_traces_path(&base),
        (None, None, None) => return Ok(None),
    };
    check_endpoint(&endpoint)?;
    let d = TraceSettings::new(endpoint.clone());
    Ok(Some(TraceSettings {
        endpoint,
        headers: file.headers.into_iter().collect(),
        service_name: file.service_name.unwrap_or(d.service_name),
        queue_size: file.queue_size.unwrap_or(d.queue_size).max(1),
        export_timeout: file
            .export_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(d.export_timeout)
            .max(Duration::from_millis(1)),
    }))
}

/// `base` with `/v1/traces` appended, as the OTLP exporter specification
/// says of `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn with_traces_path(base: &str) -> String {
    format!("{}{TRACES_PATH}", base.trim_end_matches('/'))
}

fn check_endpoint(endpoint: &str) -> Result<(), ConfigError> {
    let err = |message: &str| {
        let endpoint = without_userinfo(endpoint);
        ConfigError::Traces(format!("endpoint {endpoint:?}: {message}"))
    };
    let uri: http::Uri = endpoint.parse().map_err(|_| err("not a URL"))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(()),
        Some("https") => Err(err(
            "spans are sent over plain HTTP: export to a collector on this host or network (it may forward over TLS)",
        )),
        _ => Err(err("expected http://host:port")),
    }
}

#[cfg(test)]
#[path = "traces_tests.rs"]
mod tests;
