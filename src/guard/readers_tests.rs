//! Unit tests of `readers`.

use super::*;

#[test]
fn urls_readers_disagree_on_say_why() {
    for (url, why) in [
        ("http://api.example.com\\@127.0.0.1/", "backslash"),
        ("https://api.example.com\\@evil.com/", "backslash"),
        ("https://example.com/a\\b", "backslash"),
        ("http://evil.com\t@127.0.0.1/", "whitespace"),
        ("http://127.0.0.1/\n", "whitespace"),
        ("http://127.0.0.1\u{85}/", "control"),
        ("http://127.0.0.1\u{3000}/", "whitespace"),
        ("http:127.0.0.1/", "scheme://host"),
        ("http:/127.0.0.1/", "scheme://host"),
        ("HTTP:///127.0.0.1/", "scheme://host"),
        ("wss:////127.0.0.1/", "scheme://host"),
        ("http://a@b@127.0.0.1/", "more than one @"),
        ("http://%31%32%37.0.0.1/", "percent"),
        ("http://[fe80::1%25eth0]/", "percent"),
        ("http://user%40x@example.com/", "percent"),
        ("http://faß.de/", "IDNA"),
        ("http://local\u{200d}host/", "IDNA"),
        ("http://0177.0.0.1/", "leading zero"),
        ("http://0177.1/", "leading zero"),
        ("http://10.0.0.010:80/", "leading zero"),
        ("http://1.0012.../", "leading zero"),
    ] {
        let got = ambiguity(url);
        assert!(got.is_some_and(|g| g.contains(why)), "{url:?}: {got:?}");
    }
}

#[test]
fn urls_readers_agree_on_are_not_ambiguous() {
    for url in [
        "https://example.com/",
        "https://user:pass@example.com:0443/a?b=c@d#e@f",
        "http://127.0.0.1#@evil.com/",
        "http://127.0.0.1?@evil.com/",
        "https://example.com/redirect?to=http://a@b@127.0.0.1/",
        "https://faß.example.com@example.com/",
        "https://bücher.example/",
        "http://127.000.000.001/",
        "http://0x7f.1/",
        "http://0251.0376.0251.0376/",
        "http://017700000001/",
        "http://10.0.0.0/",
        "file:///etc/passwd",
        "mailto:a@b.c",
        "not-a-url",
    ] {
        assert_eq!(ambiguity(url), None, "{url:?}");
    }
}
