//! Upstreams found by DNS: `dns+http://NAME:PORT[/prefix]` looks up the
//! A and AAAA records of `NAME` (every address on `PORT`, 80 when none is
//! written); `dns+srv+http://_service._proto.NAME[/prefix]` looks up its
//! SRV records (each target's addresses on the record's port). Each
//! address found is a member upstream of its own (see
//! `upstream/fleet/dns.rs`).
//!
//! Every bound is explicit: the interval between lookups
//! ([`MIN_INTERVAL`]..=[`MAX_INTERVAL`], default [`DEFAULT_INTERVAL`]),
//! the members one name may have (1..=[`MAX_MEMBERS`], default
//! [`DEFAULT_MAX_MEMBERS`]; all upstreams together still at most
//! `MAX_UPSTREAMS`).

use std::time::Duration;

use super::error::ConfigError;

/// How often a name is looked up again, unless its table says.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
/// Shortest interval between two lookups of one name.
pub(super) const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// Longest interval between two lookups of one name.
pub(super) const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Most members one name has, unless its table says.
pub const DEFAULT_MAX_MEMBERS: usize = 16;
/// Most members one name may be given.
pub const MAX_MEMBERS: usize = 64;

/// The scheme of a name looked up for A and AAAA records.
const DNS: &str = "dns+http://";
/// The scheme of a name looked up for SRV records.
const DNS_SRV: &str = "dns+srv+http://";

/// How an upstream's members are found.
#[derive(Debug, Clone, PartialEq)]
pub struct DnsSpec {
    /// The name looked up.
    pub host: String,
    /// The members' port (A/AAAA); SRV records carry their own.
    pub port: u16,
    /// SRV records rather than A and AAAA.
    pub srv: bool,
    /// Time between two lookups.
    pub interval: Duration,
    /// Most members at once: the slots reserved for the name.
    pub max_members: usize,
}

/// `url` without its `dns+` or `dns+srv+` prefix (as `http://`), and
/// whether it had one and which; `None` for any other URL.
pub(super) fn strip(url: &str) -> Option<(String, bool)> {
    let lower = url.get(..DNS_SRV.len()).map(str::to_ascii_lowercase);
    if lower.as_deref() == Some(DNS_SRV) {
        return Some((format!("http://{}", &url[DNS_SRV.len()..]), true));
    }
    let lower = url.get(..DNS.len()).map(str::to_ascii_lowercase);
    (lower.as_deref() == Some(DNS)).then(|| (format!("http://{}", &url[DNS.len()..]), false))
}

/// The lookup of `url` (already checked as an `http://` URL): a name, not
/// an address; a port for A/AAAA, none for SRV.
pub(super) fn spec(url: &http::Uri, srv: bool, original: &str) -> Result<DnsSpec, ConfigError> {
    let err = |message: &str| ConfigError::Upstream {
        url: crate::wire::redact::without_userinfo(original),
        message: message.to_string(),
    };
    let authority = url.authority().ok_or_else(|| err("missing host"))?;
    let host = authority.host();
    if host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok() {
        return Err(err(
            "a dns+ upstream names a DNS name, not an address; use http:// for an address",
        ));
    }
    if srv && authority.port().is_some() {
        return Err(err(
            "a dns+srv+ upstream takes its ports from the SRV records; remove the port",
        ));
    }
    Ok(DnsSpec {
        host: host.to_string(),
        port: authority.port_u16().unwrap_or(80),
        srv,
        interval: DEFAULT_INTERVAL,
        max_members: DEFAULT_MAX_MEMBERS,
    })
}

/// A table's `resolve_interval_ms` and `max_members`, within their bounds.
pub(super) fn bounded(
    dns: &mut DnsSpec,
    name: &str,
    interval_ms: Option<u64>,
    max_members: Option<usize>,
) -> Result<(), ConfigError> {
    if let Some(ms) = interval_ms {
        let interval = Duration::from_millis(ms);
        if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&interval) {
            return Err(ConfigError::Upstreams(format!(
                "upstream {name:?}: resolve_interval_ms must be {} to {}",
                MIN_INTERVAL.as_millis(),
                MAX_INTERVAL.as_millis()
            )));
        }
        dns.interval = interval;
    }
    if let Some(n) = max_members {
        if !(1..=MAX_MEMBERS).contains(&n) {
            return Err(ConfigError::Upstreams(format!(
                "upstream {name:?}: max_members must be 1 to {MAX_MEMBERS}"
            )));
        }
        dns.max_members = n;
    }
    Ok(())
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
