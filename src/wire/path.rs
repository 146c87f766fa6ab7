//! One path for routing, gating and forwarding.
//!
//! Ollama's router matches the percent-decoded path (Go's `URL.Path`), so
//! `/api/%63hat` runs as `/api/chat` there. If augur classified the raw
//! path it would gate a different route from the one Ollama runs. Every
//! request path is therefore decoded and canonicalized once, before
//! anything looks at it, and the canonical path is what augur routes on,
//! gates on and forwards:
//!
//! * percent-escapes are decoded (`%2F` too: Go decodes it into the path);
//! * empty segments are removed (`//api//chat` → `/api/chat`), as are `.`
//!   segments, and `..` removes the segment before it;
//! * a trailing `/` is removed (Ollama would redirect to the path without it);
//! * the result is re-encoded so that decoding it gives it back.
//!
//! What cannot be read that way is refused: a path that does not start
//! with `/`, a malformed escape, bytes that are not UTF-8 once decoded,
//! control characters, and `..` above the root. The query string is kept
//! as sent.

use std::fmt::Write as _;

/// Why a request path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid request path: {0}")]
pub struct PathError(&'static str);

/// Longest path accepted, decoded.
const MAX_PATH: usize = 8 * 1024;

/// The canonical form of `raw` (a request path, without its query).
pub fn canonical(raw: &str) -> Result<String, PathError> {
    if !raw.starts_with('/') {
        return Err(PathError("it must start with /"));
    }
    if raw.len() > MAX_PATH {
        return Err(PathError("it is too long"));
    }
    let decoded = decode(raw.as_bytes())?;
    let decoded = String::from_utf8(decoded).map_err(|_| PathError("it is not UTF-8"))?;
    if decoded.chars().any(char::is_control) {
        return Err(PathError("it holds control characters"));
    }
    let mut segments: Vec<&str> = Vec::new();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError("it leaves the root"));
                }
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(decoded.len() + 1);
    if segments.is_empty() {
        out.push('/');
    }
    for s in segments {
        out.push('/');
        encode_segment(s, &mut out);
    }
    // Encoding can lengthen a path: the bound holds for what is forwarded
    // too, so that a canonical path is canonical again.
    if out.len() > MAX_PATH {
        return Err(PathError("it is too long"));
    }
    Ok(out)
}

/// Whether `raw` is already canonical (the common case: no work to do).
pub fn is_canonical(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    if bytes.first() != Some(&b'/') || bytes.len() > MAX_PATH {
        return false;
    }
    if bytes.len() == 1 {
        return true;
    }
    // One pass, segment by segment: each is non-empty, plain, and not a
    // dot segment; there is no trailing slash.
    bytes[1..].split(|b| *b == b'/').all(|segment| {
        !segment.is_empty()
            && segment != b"."
            && segment != b".."
            && segment.iter().all(|b| is_plain(*b))
    })
}

/// Bytes that stand for themselves in a canonical path segment.
fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
        )
}

/// The last segment of a canonical path, decoded (`/v1/models/a%20b` →
/// `a b`); `None` for the root or an undecodable segment.
pub(crate) fn last_segment(path: &str) -> Option<String> {
    let last = path.rsplit('/').next().filter(|s| !s.is_empty())?;
    String::from_utf8(decode(last.as_bytes()).ok()?).ok()
}

fn decode(raw: &[u8]) -> Result<Vec<u8>, PathError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = |b: u8| (b as char).to_digit(16);
            match (
                raw.get(i + 1).and_then(|b| hex(*b)),
                raw.get(i + 2).and_then(|b| hex(*b)),
            ) {
                (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                _ => return Err(PathError("it holds a malformed %-escape")),
            }
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    Ok(out)
}

fn encode_segment(segment: &str, out: &mut String) {
    for b in segment.bytes() {
        if is_plain(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;
