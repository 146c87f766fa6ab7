//! Unit tests of `secret`.

use super::*;

#[test]
fn secrets_compare_whole() {
    let s = Secret("token".into());
    assert!(s.matches(b"token"));
    assert!(!s.matches(b"toke"));
    assert!(!s.matches(b"token2"));
}
