//! Unit tests of `headers`.

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
