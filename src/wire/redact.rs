//! URLs with their credentials taken out, for logs and error messages: a
//! collector, store or upstream URL may carry `user:password@`, and a
//! log line is read by more people than the config file.

use std::borrow::Cow;

/// What the userinfo of a URL is replaced with.
const HIDDEN: &str = "***";

/// `url` with anything before the last `@` of its authority replaced by
/// `***` (`redis://:secret@cache:6379/0` is `redis://***@cache:6379/0`).
pub fn without_userinfo(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}{HIDDEN}{}", &url[..start], &url[start + at..]),
        None => url.to_string(),
    }
}

/// Whether `c` ends a URL's authority in running text (a log value, an
/// error message): where the URL's path begins, or where the URL itself
/// ends (a quote, a space).
fn ends_authority(c: char) -> bool {
    matches!(c, '/' | '?' | '#' | '"' | '\'' | '\\' | '<' | '>' | '`')
        || c.is_whitespace()
        || c.is_control()
}

/// `text` with the userinfo of every URL in it (`scheme://user:pass@`)
/// replaced by `***`; borrowed when there was none.
pub(crate) fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let start = i + 3;
        let end = rest[start..]
            .find(ends_authority)
            .map_or(rest.len(), |e| start + e);
        match rest[start..end].rfind('@') {
            Some(at) => {
                out.push_str(&rest[..start]);
                out.push_str(HIDDEN);
                out.push_str(&rest[start + at..end]);
            }
            None => out.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    if out == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
