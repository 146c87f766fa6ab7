//! Unit tests of `messages`.

use super::*;

#[test]
fn base64_reads_like_go() {
    assert_eq!(canonical_base64("dGVzdA==").as_deref(), Some("dGVzdA=="));
    assert_eq!(canonical_base64("dGVzdB==").as_deref(), Some("dGVzdA=="));
    assert_eq!(
        canonical_base64("dGVz\r\ndA==").as_deref(),
        Some("dGVzdA==")
    );
    assert_eq!(canonical_base64("").as_deref(), Some(""));
    for bad in [
        "dGVzdA",
        "not-valid-base64!",
        "====",
        "dGVzd===",
        "d===",
        "dG=zdA==",
    ] {
        assert_eq!(canonical_base64(bad), None, "{bad}");
    }
}

#[test]
fn image_urls_are_checked_like_ollama() {
    assert!(decode_image_url("data:image/png;base64,dGVzdA==").is_ok());
    assert!(decode_image_url("data:;base64,dGVzdA==").is_ok());
    let gif = decode_image_url("data:image/gif;base64,R0lGODlh").err();
    assert_eq!(
        gif.map(|e| e.to_string()).as_deref(),
        Some("invalid image input")
    );
    let remote = decode_image_url("https://example.com/a.png").err();
    assert!(remote.is_some_and(|e| e.to_string().starts_with("image URLs are not")));
}
