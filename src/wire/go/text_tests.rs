//! Unit tests of `text`.

use super::*;

#[test]
fn quotes_like_go() {
    assert_eq!(quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
    assert_eq!(quote("é\u{2028}"), r#""é\u2028""#);
}
