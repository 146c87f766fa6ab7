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
mod tests {
    use super::*;

    #[test]
    fn variants_of_a_route_are_one_path() {
        for raw in [
            "/api/chat",
            "//api/chat",
            "/api//chat",
            "/api/chat/",
            "/api/%63hat",
            "/api/%63%68%61%74",
            "/api%2Fchat",
            "/api/./chat",
            "/api/x/../chat",
            "/./api/chat",
        ] {
            assert_eq!(canonical(raw).as_deref(), Ok("/api/chat"), "{raw}");
        }
        assert_eq!(canonical("/").as_deref(), Ok("/"));
        assert_eq!(canonical("//").as_deref(), Ok("/"));
        assert_eq!(
            canonical("/api/blobs/sha256:abc").as_deref(),
            Ok("/api/blobs/sha256:abc")
        );
    }

    #[test]
    fn decoding_the_canonical_path_gives_it_back() {
        let p = canonical("/v1/models/a%20b%25c%3Fd%23e%C3%A9").unwrap();
        assert_eq!(p, "/v1/models/a%20b%25c%3Fd%23e%C3%A9");
        assert_eq!(
            String::from_utf8(decode(p.as_bytes()).unwrap()).unwrap(),
            "/v1/models/a b%c?d#eé"
        );
        assert_eq!(canonical(&p).unwrap(), p);
    }

    #[test]
    fn the_last_segment_is_decoded() {
        assert_eq!(
            last_segment("/v1/models/gemma3%3A4b").as_deref(),
            Some("gemma3:4b")
        );
        assert_eq!(last_segment("/"), None);
    }

    #[test]
    fn unreadable_paths_are_refused() {
        for raw in [
            "api/chat",
            "*",
            "/api/%6",
            "/api/%zz",
            "/api/%FF",
            "/api/%00chat",
            "/api/%0Achat",
            "/../api/chat",
            "/api/../../chat",
        ] {
            assert!(canonical(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn canonical_paths_are_recognized_without_work() {
        for raw in [
            "/",
            "/api/chat",
            "/api/blobs/sha256:abc",
            "/v1/models/gemma3:4b",
        ] {
            assert!(is_canonical(raw), "{raw}");
            assert_eq!(canonical(raw).as_deref(), Ok(raw));
        }
        for raw in [
            "//api/chat",
            "/api/chat/",
            "/api/%63hat",
            "/api/./chat",
            "/a/../b",
        ] {
            assert!(!is_canonical(raw), "{raw}");
        }
    }

    proptest::proptest! {
        /// A path is canonical exactly when canonicalizing leaves it as is.
        #[test]
        fn is_canonical_agrees_with_canonical(raw in "/?([a-z.%/]{0,3}/?){0,5}") {
            let same = canonical(&raw).is_ok_and(|c| c == raw);
            proptest::prop_assert_eq!(is_canonical(&raw), same, "{:?}", raw);
        }
    }
}

#[cfg(test)]
mod grow_tests {
    use super::*;

    #[test]
    fn a_path_that_grows_past_the_bound_when_encoded_is_refused() {
        let raw = format!("/{}", "é".repeat(MAX_PATH / 2 - 1));
        assert!(raw.len() <= MAX_PATH);
        assert_eq!(canonical(&raw), Err(PathError("it is too long")));
    }
}
