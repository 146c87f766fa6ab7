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
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_are_dropped() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-secret"),
        );
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key(header::CONTENT_TYPE));
    }

    #[test]
    fn forwarded_headers_append() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("proxy.example.com"));
        h.insert("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        let client = ClientInfo::new("192.168.1.2".parse().unwrap());
        prepare_request_headers(
            &mut h,
            &HeaderValue::from_static("127.0.0.1:11434"),
            Some(client),
        );
        assert_eq!(h[header::HOST], "127.0.0.1:11434");
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 192.168.1.2");
        assert_eq!(h["x-forwarded-proto"], "http");
        let mut h = HeaderMap::new();
        let client = ClientInfo::new("192.168.1.2".parse().unwrap()).over_tls(true);
        prepare_request_headers(&mut h, &HeaderValue::from_static("u:1"), Some(client));
        assert_eq!(h["x-forwarded-proto"], "https");
    }
}
