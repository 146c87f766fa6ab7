//! Where a request came from: the downstream client's address and
//! whether it connected over TLS, made once per client connection and put
//! in each request's extensions (auth, limits, `X-Forwarded-*`).

use std::net::IpAddr;

use http::HeaderValue;

/// Where a request came from, for auth, limits and `X-Forwarded-*`; made
/// once per client connection and put in each request's extensions.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub ip: IpAddr,
    /// `ip` as a header value, for `X-Forwarded-For`.
    pub(crate) forwarded_for: HeaderValue,
    /// The client connected over TLS (`X-Forwarded-Proto: https`).
    pub(crate) tls: bool,
}

impl ClientInfo {
    /// The client at `ip`.
    pub fn new(ip: IpAddr) -> Self {
        let forwarded_for = HeaderValue::from_str(&ip.to_string())
            .unwrap_or_else(|_| HeaderValue::from_static("unknown"));
        Self {
            ip,
            forwarded_for,
            tls: false,
        }
    }

    /// The same client, connected over TLS or not.
    pub fn over_tls(mut self, tls: bool) -> Self {
        self.tls = tls;
        self
    }
}
