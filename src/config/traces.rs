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
mod tests {
    use super::*;

    fn file(text: &str) -> FileTraces {
        toml::from_str(text).unwrap()
    }

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn traces_are_off_without_an_endpoint() {
        assert_eq!(resolve(file(""), vars(&[])).unwrap(), None);
        let disabled = vars(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ]);
        assert_eq!(resolve(file(""), disabled).unwrap(), None);
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let f = || file("endpoint = \"http://file:4318/\"\nqueue_size = 10\n");
        let s = resolve(f(), vars(&[])).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://file:4318/v1/traces");
        assert_eq!(s.queue_size, 10);
        let env = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]);
        let s = resolve(f(), env).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://env:4318/v1/traces");
        let env = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
        ]);
        let s = resolve(f(), env).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://t:1/x", "the signal's endpoint as it is");
    }

    #[test]
    fn the_shipped_config_file_holds_the_defaults() {
        let text = include_str!("../../configs/augur.toml");
        let file: toml::Table = toml::from_str(text).unwrap();
        let section = || -> FileTraces { file["traces"].clone().try_into().unwrap() };
        assert_eq!(resolve(section(), vars(&[])).unwrap(), None);
        let mut traces = section();
        traces.endpoint = Some("http://c:4318".into());
        let s = resolve(traces, vars(&[])).unwrap().unwrap();
        assert_eq!(s, TraceSettings::new("http://c:4318/v1/traces"));
    }

    #[test]
    fn an_endpoint_that_is_not_a_url_is_refused() {
        for endpoint in ["collector:4318", "https://collector:4318"] {
            let pairs = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)];
            assert!(resolve(file(""), vars(&pairs)).is_err(), "{endpoint}");
        }
    }
}
