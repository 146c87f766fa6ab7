//! The classic SSRF payloads (PayloadsAllTheThings' "Server Side Request
//! Forgery" bypass lists, OWASP's SSRF cheat sheet) and public URLs.

use std::net::IpAddr;

use super::*;

/// URLs that reach inside, and why.
const INSIDE: &[(&str, Inside)] = &[
    ("http://127.0.0.1/", Inside::Loopback),
    ("http://127.0.0.1:80/admin", Inside::Loopback),
    ("http://localhost/", Inside::Loopback),
    ("http://LOCALHOST./", Inside::Loopback),
    ("http://api.localhost/", Inside::Loopback),
    ("http://127.1/", Inside::Loopback),
    ("http://127.0.1/", Inside::Loopback),
    ("http://2130706433/", Inside::Loopback),
    ("http://0x7f000001/", Inside::Loopback),
    ("http://0x7f.1/", Inside::Loopback),
    ("http://0177.0.0.1/", Inside::Ambiguous),
    ("http://0177.1/", Inside::Ambiguous),
    ("http://017700000001/", Inside::Loopback),
    ("http://127.000.000.001/", Inside::Loopback),
    ("http://127.0.0.1./", Inside::Loopback),
    ("http://[::1]/", Inside::Loopback),
    ("http://[0:0:0:0:0:0:0:1]/", Inside::Loopback),
    ("http://[::ffff:127.0.0.1]/", Inside::Loopback),
    ("http://[::ffff:7f00:1]/", Inside::Loopback),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]/", Inside::Loopback),
    ("http://[::127.0.0.1]/", Inside::Loopback),
    ("http://[64:ff9b::127.0.0.1]/", Inside::Loopback),
    ("http://[2002:7f00:1::]/", Inside::Loopback),
    ("http://evil.com@127.0.0.1/", Inside::Loopback),
    ("http://user:pass@127.0.0.1:8080/", Inside::Loopback),
    ("http://127.0.0.1#@evil.com/", Inside::Loopback),
    ("http://127.0.0.1?@evil.com/", Inside::Loopback),
    ("http://evil.com@evil.com@127.0.0.1/", Inside::Ambiguous),
    ("http://①②⑦.⓪.⓪.①/", Inside::Loopback),
    ("http://１２７.０.０.１/", Inside::Loopback),
    ("http://0.0.0.0/", Inside::Unspecified),
    ("http://0/", Inside::Unspecified),
    ("http://[::]/", Inside::Unspecified),
    ("http://10.0.0.1/", Inside::Private),
    ("http://172.16.0.1/", Inside::Private),
    ("http://172.31.255.255/", Inside::Private),
    ("http://192.168.1.1/", Inside::Private),
    ("http://3232235777/", Inside::Private),
    ("http://0xc0.0xa8.1.1/", Inside::Private),
    ("http://[fc00::1]/", Inside::Private),
    ("http://[fd12:3456::1]/", Inside::Private),
    ("http://[fec0::1]/", Inside::Private),
    ("http://printer.local/", Inside::Private),
    ("http://db.internal/", Inside::Private),
    ("http://nas.home.arpa/", Inside::Private),
    ("http://100.64.0.1/", Inside::SharedCgnat),
    ("http://100.127.255.254/", Inside::SharedCgnat),
    ("http://169.254.0.1/", Inside::LinkLocal),
    ("http://[fe80::1]/", Inside::LinkLocal),
    ("http://[fe80::1%25eth0]/", Inside::Ambiguous),
    ("http://169.254.169.254/latest/meta-data/", Inside::Metadata),
    (
        "http://169.254.169.254./latest/meta-data/",
        Inside::Metadata,
    ),
    ("http://2852039166/latest/meta-data/", Inside::Metadata),
    ("http://0xa9fea9fe/", Inside::Metadata),
    ("http://0251.0376.0251.0376/", Inside::Metadata),
    ("http://[::ffff:169.254.169.254]/", Inside::Metadata),
    ("http://[::ffff:a9fe:a9fe]/", Inside::Metadata),
    ("http://[fd00:ec2::254]/latest/meta-data/", Inside::Metadata),
    (
        "http://metadata.google.internal/computeMetadata/v1/",
        Inside::Metadata,
    ),
    ("http://metadata.google.internal./", Inside::Metadata),
    ("http://METADATA.GOOGLE.INTERNAL/", Inside::Metadata),
    ("http://metadata/", Inside::Metadata),
    ("http://100.100.100.200/latest/meta-data/", Inside::Metadata),
    ("http://168.63.129.16/", Inside::Metadata),
    ("http://224.0.0.1/", Inside::Reserved),
    ("http://255.255.255.255/", Inside::Reserved),
    ("http://240.0.0.1/", Inside::Reserved),
    ("http://192.0.2.1/", Inside::Reserved),
    ("http://198.18.0.1/", Inside::Reserved),
    ("http://[ff02::1]/", Inside::Reserved),
    ("http://[2001:db8::1]/", Inside::Reserved),
    (
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        Inside::Reserved,
    ),
    ("http://evil.com\\@127.0.0.1/", Inside::Ambiguous),
    ("http://api.example.com\\@127.0.0.1/", Inside::Ambiguous),
    ("https://api.example.com\\@evil.com/", Inside::Ambiguous),
    ("http:127.0.0.1/", Inside::Ambiguous),
    ("http:///127.0.0.1/", Inside::Ambiguous),
    ("http://faß.de/", Inside::Ambiguous),
    ("http://127.0.0.1\\@evil.com/", Inside::Ambiguous),
    ("http://evil.com\t@127.0.0.1/", Inside::Ambiguous),
    ("http://127.0.0.1 /", Inside::Ambiguous),
    (" http://127.0.0.1/", Inside::Ambiguous),
    ("http://%31%32%37.0.0.1/", Inside::Ambiguous),
    ("http://127.0.0.1%2f@evil.com/", Inside::Ambiguous),
    ("not a url", Inside::Ambiguous),
    ("/relative/path", Inside::Unreadable),
    ("file:///etc/passwd", Inside::Unreadable),
    ("http://", Inside::Unreadable),
];

/// URLs that go outside.
const PUBLIC: &[&str] = &[
    "https://example.com/",
    "https://example.com:8443/a/b?c=d#e",
    "http://8.8.8.8/",
    "http://1.1.1.1/dns-query",
    "http://93.184.216.34/",
    "http://[2606:4700:4700::1111]/",
    "http://[2001:4860:4860::8888]/",
    "http://[::ffff:8.8.8.8]/",
    "http://172.32.0.1/",
    "http://172.15.255.255/",
    "http://100.63.255.255/",
    "http://100.128.0.1/",
    "http://192.169.0.1/",
    "http://11.0.0.1/",
    "https://bücher.example/",
    "https://localhost.example.com/",
    "https://metadata.example.com/",
    "https://my-internal-wiki.com/",
    "https://user@example.com/",
    "https://example.com/redirect?to=http://127.0.0.1/",
];

#[test]
fn classic_payloads_reach_inside() {
    for (url, why) in INSIDE {
        assert_eq!(classify_url(url), Reach::Inside(*why), "{url}");
    }
}

#[test]
fn public_urls_are_never_flagged() {
    for url in PUBLIC {
        assert!(
            matches!(classify_url(url), Reach::Public(_) | Reach::Name(_)),
            "{url}: {:?}",
            classify_url(url)
        );
    }
}

#[test]
fn names_are_mapped_before_they_are_judged() {
    assert_eq!(
        classify_url("https://EXAMPLE.com./x"),
        Reach::Name("example.com".into())
    );
    assert_eq!(
        classify_url("https://bücher.example/"),
        Reach::Name("xn--bcher-kva.example".into())
    );
}

#[test]
fn every_address_range_edge_is_where_it_belongs() {
    let inside = |s: &str| matches!(classify_ip(s.parse().unwrap()), Reach::Inside(_));
    for s in [
        "9.255.255.255",
        "11.0.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.167.255.255",
        "192.169.0.0",
        "223.255.255.255",
        "2000::1",
        "3fff:ffff::1",
    ] {
        assert!(!inside(s), "{s} is public");
    }
    for s in [
        "10.0.0.0",
        "10.255.255.255",
        "127.255.255.255",
        "169.254.255.255",
        "172.16.0.0",
        "172.31.255.255",
        "192.168.0.0",
        "192.168.255.255",
        "224.0.0.0",
        "fbff::1",
        "fc00::",
        "fdff::1",
        "febf::1",
        "4000::1",
        "::ffff:10.0.0.1",
    ] {
        assert!(inside(s), "{s} is inside");
    }
}

#[test]
fn overlong_urls_are_not_judged() {
    let url = format!("https://example.com/{}", "a".repeat(MAX_URL));
    assert_eq!(classify_url(&url), Reach::Inside(Inside::Unreadable));
}

#[tokio::test]
async fn names_resolving_inside_are_inside_and_unresolved_names_are_not_let_out() {
    let t = std::time::Duration::from_secs(2);
    assert_eq!(
        resolve("localhost", t).await,
        Reach::Inside(Inside::Loopback)
    );
    assert_eq!(
        resolve("127.0.0.1", t).await,
        Reach::Inside(Inside::Loopback)
    );
    assert_eq!(
        resolve("no-such-host.invalid", t).await,
        Reach::Inside(Inside::Unresolved)
    );
    let ip: IpAddr = "8.8.8.8".parse().unwrap();
    assert_eq!(resolve("8.8.8.8", t).await, Reach::Public(ip));
}

/// A non-special scheme's host is opaque to WHATWG, yet a client that
/// fetches it over HTTP reads it as an address: it is judged as one.
#[test]
fn opaque_hosts_are_judged_as_http_hosts() {
    assert_eq!(
        classify_url("hvtp://2130706433./"),
        Reach::Inside(Inside::Loopback)
    );
    assert_eq!(
        classify_url("gopher://10.1.1.1/"),
        Reach::Inside(Inside::Private)
    );
    let ip: IpAddr = "119.253.5.51".parse().unwrap();
    assert_eq!(classify_url("hvtp://2013070643./"), Reach::Public(ip));
    assert_eq!(
        classify_url("hwtp://７.０./"),
        Reach::Inside(Inside::Ambiguous)
    );
}
