//! The bounds of a request's head (request line and header fields),
//! enforced by augur so that an oversized head is refused like every other
//! request augur refuses: 431 with a JSON body in the route's error shape.
//!
//! hyper answers a head it will not buffer (`max_buf_size`) or that has
//! more fields than it parses (`max_headers`; over HTTP/2, more than
//! `max_header_list_size`) itself, with a 431 and an empty body, before any
//! service sees the request, and offers no hook to shape that answer. So
//! hyper's bounds are set far above augur's ([`HYPER_MAX_BUF`],
//! [`HYPER_MAX_FIELDS`], [`HYPER_MAX_HEADER_LIST`]) and stay only as a
//! memory backstop; augur refuses heads over [`MAX_HEAD_BYTES`] or
//! [`MAX_FIELDS`] here. Only a head over the backstop (more than 1 MiB, or
//! more than 1,000 fields) still gets hyper's bare 431, and the connection
//! is closed.

use http::request::Parts;

use crate::error::ProxyError;

/// Largest head augur accepts, counted as HTTP/1.1 writes it.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most header fields augur accepts (hyper's own default before).
pub(crate) const MAX_FIELDS: usize = 100;
/// hyper's HTTP/1 read buffer bound: a head that does not fit is answered
/// by hyper alone. Also bounds the response bytes hyper queues.
pub(crate) const HYPER_MAX_BUF: usize = 1024 * 1024 + 8192;
/// Most header fields hyper parses in an HTTP/1 head.
pub(crate) const HYPER_MAX_FIELDS: usize = 1000;
/// hyper's HTTP/2 header list bound (RFC 9113 size: each field's name and
/// value plus 32).
pub(crate) const HYPER_MAX_HEADER_LIST: u32 = 1024 * 1024;

/// Refuse a head over augur's bounds (431).
pub(super) fn check(parts: &Parts) -> Result<(), ProxyError> {
    if parts.headers.len() > MAX_FIELDS || size(parts) > MAX_HEAD_BYTES {
        return Err(ProxyError::HeadersTooLarge {
            max_bytes: MAX_HEAD_BYTES,
            max_fields: MAX_FIELDS,
        });
    }
    Ok(())
}

/// The head's size as HTTP/1.1 writes it: `METHOD target HTTP/1.1\r\n`,
/// `name: value\r\n` per field, and the blank line.
fn size(parts: &Parts) -> usize {
    let target = parts.uri.path_and_query().map_or(1, |p| p.as_str().len())
        + parts.uri.authority().map_or(0, |a| a.as_str().len());
    let line = parts.method.as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    let fields: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum();
    line + fields + 2
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
