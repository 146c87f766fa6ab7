//! Unit tests of `tape`.

use super::*;

#[test]
fn canonical_bodies_ignore_key_order_and_whitespace() {
    assert_eq!(
        canonical("{ \"b\": 1, \"a\": {\"d\": [1, 2], \"c\": null} }"),
        canonical("{\"a\":{\"c\":null,\"d\":[1,2]},\"b\":1}")
    );
    assert_eq!(canonical("{\"b\":1,\"a\":2}"), "{\"a\":2,\"b\":1}");
}
