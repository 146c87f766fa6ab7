//! The SSRF classifier: never panics, and whatever it lets out goes where
//! a WHATWG reader (the `url` crate) says the URL goes: an address it
//! calls public is the URL's own host and a global one, a name is the
//! URL's host and no IP literal (an opaque host of a non-special scheme is
//! judged as an http host); anything a reader could take another way
//! (a `\`, whitespace, control characters) is never let out.
#![no_main]

use std::net::IpAddr;

use augur::inputs::{Reach, classify_ip, classify_url};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let reach = classify_url(text);
    if matches!(reach, Reach::Inside(_)) {
        return;
    }
    assert!(
        !text
            .chars()
            .any(|c| c == '\\' || c.is_whitespace() || c.is_control()),
        "let out an ambiguous URL: {text:?}"
    );
    let url = url::Url::parse(text).expect("a URL let out parses");
    match (reach, url.host()) {
        (Reach::Public(ip), Some(url::Host::Ipv4(v4))) => {
            assert_eq!(ip, IpAddr::V4(v4));
            assert_eq!(classify_ip(ip), Reach::Public(ip));
        }
        (Reach::Public(ip), Some(url::Host::Ipv6(v6))) => {
            assert_eq!(ip, IpAddr::V6(v6));
        }
        (Reach::Public(ip), Some(url::Host::Domain(host))) => {
            // An opaque host (a non-special scheme) is judged as the host
            // of an http URL would be.
            let as_http = format!("http://{}/", host.trim_end_matches('.'));
            assert_eq!(classify_url(&as_http), Reach::Public(ip), "{text:?}");
        }
        (Reach::Name(name), Some(url::Host::Domain(host))) => {
            assert_eq!(name, host.trim_end_matches('.'));
            assert!(name.parse::<IpAddr>().is_err(), "{name} is an address");
            assert!(
                name != "localhost" && !name.ends_with(".localhost"),
                "{name}"
            );
        }
        (reach, host) => panic!("{text:?}: {reach:?} but the host is {host:?}"),
    }
});
