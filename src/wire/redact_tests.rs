//! Unit tests of `redact`.

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
