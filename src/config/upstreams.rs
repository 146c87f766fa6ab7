//! The upstreams augur forwards to: `--upstream` (repeatable, also
//! `NAME=URL`), `AUGUR_UPSTREAM` (a comma-separated list), `[[upstreams]]`
//! tables, or the single `[upstream] url`.
//!
//! Precedence: flags / environment replace the file's list whole; the
//! file's `[[upstreams]]` and `[upstream] url` are exclusive; without
//! either, the default `http://127.0.0.1:11434`. Each upstream's timeouts
//! and `warm_connections` default to the `[upstream]` table's. A
//! `dns+http://` or `dns+srv+http://` URL is a name looked up again and
//! again, each address a member upstream (see [`super::dns`]); its
//! members count against [`MAX_UPSTREAMS`] at their bound.

use std::time::Duration;

use serde::Deserialize;

use super::{
    dns::{self, DnsSpec},
    error::ConfigError,
};
use crate::wire::redact::without_userinfo;

/// Most upstreams one augur forwards to (each has its own connection pool,
/// health probe and metric labels); a name found by DNS counts as many as
/// its `max_members`.
pub const MAX_UPSTREAMS: usize = 64;
/// Longest upstream name (it is a header value and a metric label).
const MAX_NAME: usize = 64;
/// Most static model names one upstream may list.
const MAX_STATIC_MODELS: usize = 1024;

/// One `[[upstreams]]` table, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileUpstreamEntry {
    url: String,
    name: Option<String>,
    weight: Option<u32>,
    models: Option<Vec<String>>,
    connect_timeout_ms: Option<u64>,
    first_byte_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    warm_connections: Option<usize>,
    resolve_interval_ms: Option<u64>,
    max_members: Option<usize>,
}

/// One upstream, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamSpec {
    /// Unique; in `X-Augur-Upstream`, `/-/upstreams`, logs and metric
    /// labels. Defaults to the URL's `host:port`.
    pub name: String,
    pub url: http::Uri,
    /// Share of the load relative to the others (at least 1).
    pub weight: u32,
    /// Models this upstream serves, normalized; `None` = learned from its
    /// `/api/tags`.
    pub models: Option<Vec<String>>,
    /// `None` = the `[upstream]` table's value.
    pub connect_timeout: Option<Duration>,
    pub first_byte_timeout: Option<Duration>,
    pub idle_timeout: Option<Duration>,
    /// Most connections opened ahead of requests (all worker threads
    /// together); `None` = the `[upstream]` table's value.
    pub warm_connections: Option<usize>,
    /// How its members are found, for a `dns+` URL; `None`: `url` is the
    /// one upstream.
    pub dns: Option<DnsSpec>,
}

impl UpstreamSpec {
    /// An upstream at `url` with every other setting at its default.
    pub fn from_url(url: &str) -> Result<Self, ConfigError> {
        let (parsed, dns) = match dns::strip(url.trim()) {
            Some((http, srv)) => {
                let parsed = parse_url(&http)?;
                let dns = dns::spec(&parsed, srv, url)?;
                (parsed, Some(dns))
            }
            None => (parse_url(url)?, None),
        };
        Ok(Self {
            name: default_name(&parsed),
            url: parsed,
            weight: 1,
            models: None,
            connect_timeout: None,
            first_byte_timeout: None,
            idle_timeout: None,
            warm_connections: None,
            dns,
        })
    }

    /// The upstreams it stands for: its `max_members` when found by DNS.
    pub fn slots(&self) -> usize {
        self.dns.as_ref().map_or(1, |d| d.max_members)
    }

    /// `NAME=URL` or `URL`, as `--upstream` and `AUGUR_UPSTREAM` take them.
    pub fn from_flag(text: &str) -> Result<Self, ConfigError> {
        let text = text.trim();
        match text.split_once('=') {
            Some((name, url)) if !name.contains([':', '/']) => {
                let mut spec = Self::from_url(url.trim())?;
                spec.name = name.trim().to_string();
                Ok(spec)
            }
            _ => Self::from_url(text),
        }
    }

    fn from_entry(entry: FileUpstreamEntry) -> Result<Self, ConfigError> {
        let mut spec = Self::from_url(&entry.url)?;
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        if let Some(name) = entry.name {
            spec.name = name;
        }
        spec.weight = entry.weight.unwrap_or(1);
        spec.models = entry.models.map(|m| {
            m.iter()
                .map(|name| crate::wire::normalize_model_name(name))
                .collect()
        });
        spec.connect_timeout = ms(entry.connect_timeout_ms);
        spec.first_byte_timeout = ms(entry.first_byte_timeout_ms);
        spec.idle_timeout = ms(entry.idle_timeout_ms);
        spec.warm_connections = entry.warm_connections;
        let name = spec.name.clone();
        match spec.dns.as_mut() {
            Some(d) => dns::bounded(d, &name, entry.resolve_interval_ms, entry.max_members)?,
            None if entry.resolve_interval_ms.is_some() || entry.max_members.is_some() => {
                return Err(invalid(&format!(
                    "upstream {name:?}: resolve_interval_ms and max_members are for dns+http:// \
                     and dns+srv+http:// upstreams"
                )));
            }
            None => {}
        }
        Ok(spec)
    }
}

/// The upstream list from the command line (or environment) and the file.
pub(super) fn resolve(
    flags: &[String],
    entries: Vec<FileUpstreamEntry>,
    single: Option<String>,
) -> Result<Vec<UpstreamSpec>, ConfigError> {
    let flags: Vec<&String> = flags.iter().filter(|f| !f.trim().is_empty()).collect();
    let specs = if !flags.is_empty() {
        flags
            .into_iter()
            .map(|f| UpstreamSpec::from_flag(f))
            .collect::<Result<Vec<_>, _>>()?
    } else if !entries.is_empty() {
        if single.is_some() {
            return Err(invalid(
                "set either [upstream] url or [[upstreams]] tables, not both",
            ));
        }
        entries
            .into_iter()
            .map(UpstreamSpec::from_entry)
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![UpstreamSpec::from_url(
            single.as_deref().unwrap_or(DEFAULT_URL),
        )?]
    };
    check(&specs)?;
    Ok(specs)
}

/// The built-in upstream.
const DEFAULT_URL: &str = "http://127.0.0.1:11434";

fn invalid(message: &str) -> ConfigError {
    ConfigError::Upstreams(message.to_string())
}

/// Counts, names, weights and model lists within their bounds.
fn check(specs: &[UpstreamSpec]) -> Result<(), ConfigError> {
    let slots: usize = specs.iter().map(UpstreamSpec::slots).sum();
    if slots > MAX_UPSTREAMS {
        return Err(invalid(&format!(
            "at most {MAX_UPSTREAMS} upstreams are supported (a dns+ upstream counts as its \
             max_members; {slots} here)"
        )));
    }
    for (i, spec) in specs.iter().enumerate() {
        let name = &spec.name;
        let printable = name.bytes().all(|b| b.is_ascii_graphic() && b != b',');
        if name.is_empty() || name.len() > MAX_NAME || !printable {
            return Err(invalid(&format!(
                "upstream name {name:?} must be 1 to {MAX_NAME} printable ASCII characters without spaces or commas"
            )));
        }
        if specs[..i].iter().any(|s| &s.name == name) {
            return Err(invalid(&format!(
                "two upstreams are named {name:?}; give each a distinct name"
            )));
        }
        if spec.weight == 0 {
            return Err(invalid(&format!(
                "upstream {name:?}: weight must be at least 1"
            )));
        }
        if spec
            .models
            .as_ref()
            .is_some_and(|m| m.len() > MAX_STATIC_MODELS)
        {
            return Err(invalid(&format!(
                "upstream {name:?}: at most {MAX_STATIC_MODELS} models may be listed"
            )));
        }
    }
    Ok(())
}

/// The URL's `host:port`.
fn default_name(url: &http::Uri) -> String {
    url.authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default()
}

/// An `http://host[:port][/prefix]` URL. Credentials (`user:pass@`) are
/// refused: augur would send them in every `Host` header and show them in
/// logs and `/-/upstreams`; the error does not repeat them.
fn parse_url(url: &str) -> Result<http::Uri, ConfigError> {
    let err = |message: &str| ConfigError::Upstream {
        url: without_userinfo(url),
        message: message.to_string(),
    };
    let uri: http::Uri = url
        .trim_end_matches('/')
        .parse()
        .map_err(|e: http::uri::InvalidUri| err(&e.to_string()))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some(_) => {
            return Err(err(
                "only http://, dns+http:// and dns+srv+http:// upstreams are supported",
            ));
        }
        None => return Err(err("missing scheme, e.g. http://127.0.0.1:11434")),
    }
    match uri.authority() {
        None => return Err(err("missing host")),
        Some(a) if a.as_str().contains('@') => {
            return Err(err(
                "credentials (user:password@) are not supported in upstream URLs: \
                 augur would send them in the Host header and show them in logs",
            ));
        }
        Some(_) => {}
    }
    Ok(uri)
}

#[cfg(test)]
#[path = "upstreams_tests.rs"]
mod tests;
