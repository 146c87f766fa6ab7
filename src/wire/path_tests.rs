//! Unit tests of `path`.

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

#[test]
fn a_path_that_grows_past_the_bound_when_encoded_is_refused() {
    let raw = format!("/{}", "é".repeat(MAX_PATH / 2 - 1));
    assert!(raw.len() <= MAX_PATH);
    assert_eq!(canonical(&raw), Err(PathError("it is too long")));
}
