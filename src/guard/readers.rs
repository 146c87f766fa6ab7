//! Where the readers of a URL disagree on where it goes.
//!
//! augur reads a URL as WHATWG's URL standard does (the `url` crate), but
//! the tool that fetches it may read it otherwise: Python's `urllib`
//! (`urlsplit`, `urlopen`), `requests` and `urllib3` (`parse_url`), Go's
//! `net/url`, curl, Java. A URL on which they disagree is ambiguous, and
//! [`ambiguity`] says why:
//!
//! - a `\` anywhere: WHATWG reads it as `/` in an `http(s)` URL, so
//!   `http://api.example.com\@127.0.0.1/` is `api.example.com` to WHATWG
//!   and `urllib3`, and `127.0.0.1` to `urlsplit` and curl;
//! - whitespace or a control character anywhere: WHATWG drops tabs and
//!   newlines and trims spaces and controls at the ends, the others keep
//!   them or refuse the URL;
//! - an `http`, `https`, `ws`, `wss` or `ftp` URL not written
//!   `scheme://host`: WHATWG reads `http:127.0.0.1`, `http:/127.0.0.1` and
//!   `http:///127.0.0.1` as `http://127.0.0.1`, Python finds no host,
//!   curl reads some of them;
//! - more than one `@` in the authority: WHATWG, Python and Go take the
//!   last as the end of the userinfo, curl refuses the URL;
//! - a `%` in the authority (an escape in the host or userinfo, an IPv6
//!   zone id): readers decode it differently, or not at all;
//! - a host with a character IDNA readers map differently (`ß`, `ς`, a
//!   zero-width joiner or non-joiner: WHATWG and `requests` keep them,
//!   Python's `idna` codec maps `faß.de` to `fass.de`);
//! - an IPv4 address with a part written with a leading zero that reads
//!   as another address in decimal: `0177.0.0.1` is 127.0.0.1 to WHATWG
//!   and the C library (octal), 177.0.0.1 to Java and older Go and Python
//!   readers (decimal).
//!
//! Readers agree that the authority ends at the first `/`, `?` or `#`
//! (`http://127.0.0.1#@evil.com` is 127.0.0.1 to all of them), that the
//! userinfo ends at the last `@` before it, and on ports with leading
//! zeros; a port that is not ASCII digits WHATWG refuses (unreadable).

/// The schemes whose authority WHATWG reads however many slashes follow
/// the `:` (`file` aside, whose host is read apart).
const SPECIAL: [&str; 5] = ["http", "https", "ws", "wss", "ftp"];

/// Characters IDNA readers map differently: UTS #46's deviations.
const DEVIATIONS: [char; 4] = ['\u{df}', '\u{3c2}', '\u{200c}', '\u{200d}'];

/// Why readers of URL `text` disagree on where it goes, if they do.
pub(crate) fn ambiguity(text: &str) -> Option<&'static str> {
    if text.contains('\\') {
        return Some("a backslash");
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("whitespace or a control character");
    }
    let (scheme, rest) = text.split_once(':')?;
    let slashes = rest.len() - rest.trim_start_matches('/').len();
    if SPECIAL.iter().any(|s| s.eq_ignore_ascii_case(scheme)) && slashes != 2 {
        return Some("not written scheme://host");
    }
    let authority = authority(text)?;
    if authority.contains('%') {
        return Some("a percent-escape in its authority");
    }
    if authority.matches('@').count() > 1 {
        return Some("more than one @ in its authority");
    }
    let host = authority.rsplit('@').next().unwrap_or(authority);
    if host.contains(DEVIATIONS) {
        return Some("a character IDNA readers map differently in its host");
    }
    if octal_reads_otherwise(host) {
        return Some("an IPv4 part with a leading zero (octal or decimal)");
    }
    None
}

/// The authority of `text` as written: after `scheme://`, up to the first
/// `/`, `?` or `#`; `None` when `//` does not follow the scheme.
pub(crate) fn authority(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once(':')?;
    let rest = rest.strip_prefix("//")?;
    Some(rest.split(['/', '?', '#']).next().unwrap_or(rest))
}

/// Whether `host` (with its port) is an IPv4 address of decimal parts, one
/// of them with a leading zero, that reads as another address when the
/// parts are read as decimal than when they are read as octal.
fn octal_reads_otherwise(host: &str) -> bool {
    let host = host.split(':').next().unwrap_or(host);
    // Trailing dots are dropped before a name is read as an address.
    let host = host.trim_end_matches('.');
    let parts: Vec<&str> = host.split('.').collect();
    let decimal = parts
        .iter()
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !decimal || !parts.iter().any(|p| p.len() > 1 && p.starts_with('0')) {
        return false;
    }
    match (ipv4(&parts, 8), ipv4(&parts, 10)) {
        (Some(octal), Some(dec)) => octal != dec,
        _ => false,
    }
}

/// The address of 1 to 4 parts as `inet_aton` reads them (the last part
/// fills the bytes left), each part in `radix` when it has a leading zero.
fn ipv4(parts: &[&str], radix: u32) -> Option<u32> {
    let (last, init) = parts.split_last()?;
    if init.len() > 3 {
        return None;
    }
    let value = |p: &str| {
        let radix = if p.len() > 1 && p.starts_with('0') {
            radix
        } else {
            10
        };
        u64::from_str_radix(p, radix).ok()
    };
    let mut address: u64 = 0;
    for (i, p) in init.iter().enumerate() {
        let v = value(p).filter(|v| *v <= 255)?;
        address |= v << (24 - 8 * i);
    }
    let room = 32 - 8 * init.len() as u32;
    let v = value(last).filter(|v| *v < (1u64 << room))?;
    u32::try_from(address | v).ok()
}

#[cfg(test)]
#[path = "readers_tests.rs"]
mod tests;
