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
mod tests {
    use super::*;

    #[test]
    fn a_urls_userinfo_is_hidden() {
        assert_eq!(
            without_userinfo("http://user:secret@collector:4318/v1/traces"),
            "http://***@collector:4318/v1/traces"
        );
        assert_eq!(
            without_userinfo("redis://:pw@cache:6379/0"),
            "redis://***@cache:6379/0"
        );
        assert_eq!(without_userinfo("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(without_userinfo("memory"), "memory");
    }

    #[test]
    fn every_url_in_a_text_loses_its_userinfo() {
        for (text, want) in [
            (
                "error sending request for url (http://user:secret@collector:4318/v1/traces)",
                "error sending request for url (http://***@collector:4318/v1/traces)",
            ),
            (
                "store=redis://:p@ss@cache:6379/0 up=false",
                "store=redis://***@cache:6379/0 up=false",
            ),
            (
                r#"{"endpoint":"http://u:p@[::1]:4318","b":"x://a@b"}"#,
                r#"{"endpoint":"http://***@[::1]:4318","b":"x://***@b"}"#,
            ),
            (
                "a=http://u:p@h1 b=https://h2/?to=http://u:p@h3",
                "a=http://***@h1 b=https://h2/?to=http://***@h3",
            ),
        ] {
            assert_eq!(redact_urls(text), want, "{text}");
        }
        for text in [
            "http://example.com/a@b",
            "mail a@b.c about http://example.com",
            "no url",
        ] {
            assert!(matches!(redact_urls(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
