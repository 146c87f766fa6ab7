//! Unit tests of `upstream_error`.

use super::*;

#[test]
fn errors_are_classified_once() {
    let s = |c: u16| StatusCode::from_u16(c).unwrap();
    assert_eq!(
        classify(s(500), "invalid JSON schema in format"),
        UpstreamKind::SchemaRejected
    );
    assert_eq!(
        classify(
            s(400),
            r#"{"error":{"code":400,"message":"JSON schema conversion failed: Unrecognized schema"}}"#
        ),
        UpstreamKind::SchemaRejected
    );
    assert_eq!(
        classify(s(404), "model \"x\" not found"),
        UpstreamKind::Other
    );
    assert_eq!(
        classify(s(500), "model runner has unexpectedly stopped"),
        UpstreamKind::Other
    );
}
