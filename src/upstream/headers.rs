//! Headers on the way through: hop-by-hop headers (RFC 9110 §7.6.1) are
//! dropped both ways; on the way up `Host` becomes the upstream's and
//! `X-Forwarded-For` / `X-Forwarded-Proto` are added.

use http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::client::ClientInfo;

/// Hop-by-hop headers (RFC 9110 §7.6.1) are for one connection only.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Remove hop-by-hop headers, including those named in `Connection`.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none: one pass over the names is cheaper than
    // removing each by hash.
    let present =
        |name: &HeaderName| HOP_BY_HOP.contains(name) || name.as_str() == "proxy-connection";
    if !headers.keys().any(present) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
}

pub(super) const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

pub(super) fn prepare_request_headers(
    headers: &mut HeaderMap,
    authority: &HeaderValue,
    client: Option<ClientInfo>,
) {
    strip_hop_by_hop(headers);
    headers.insert(header::HOST, authority.clone());
    if let Some(client) = client {
        let forwarded = match headers.get(&X_FORWARDED_FOR).map(HeaderValue::as_bytes) {
            Some(prior) if !prior.is_empty() => {
                let mut joined = prior.to_vec();
                joined.extend_from_slice(b", ");
                joined.extend_from_slice(client.forwarded_for.as_bytes());
                HeaderValue::from_bytes(&joined).ok()
            }
            _ => Some(client.forwarded_for.clone()),
        };
        if let Some(v) = forwarded {
            headers.insert(X_FORWARDED_FOR, v);
        }
        if !headers.contains_key(&X_FORWARDED_PROTO) {
            let proto = if client.tls { "https" } else { "http" };
            headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(proto));
        }
    }
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
