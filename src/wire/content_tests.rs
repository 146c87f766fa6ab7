//! Unit tests of `content`.

use super::*;

#[test]
fn content_types_are_classified() {
    let kind = |ct: &'static str| BodyKind::of(Some(&HeaderValue::from_static(ct)));
    assert_eq!(kind("application/x-ndjson"), BodyKind::Ndjson);
    assert_eq!(kind("text/event-stream; charset=utf-8"), BodyKind::Sse);
    assert_eq!(kind("Text/Event-Stream"), BodyKind::Sse);
    assert_eq!(kind("application/json; charset=utf-8"), BodyKind::Whole);
    assert_eq!(BodyKind::of(None), BodyKind::Whole);
    assert!(kind("application/x-ndjson").is_stream());
}
