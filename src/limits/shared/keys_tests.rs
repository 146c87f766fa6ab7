//! Unit tests of `keys`.

use super::*;

#[test]
fn keys_share_the_principal_as_hash_tag() {
    assert_eq!(
        key_for("augur", "key:ci", "rate", None),
        "augur:{key:ci}:rate"
    );
    assert_eq!(
        key_for("augur", "ip:::1", "tokens", Some("gemma3:latest")),
        "augur:{ip:::1}:tokens:gemma3:latest"
    );
    let long = "m".repeat(500);
    let k = key_for("augur", "key:ci", "rate", Some(&long));
    assert!(k.len() < 100 && k.contains(":#"), "{k}");
}

#[test]
fn rate_interval_matches_governor() {
    let BucketSpec::Rate {
        interval_us, burst, ..
    } = BucketSpec::rate("k".into(), Scope::Principal, 10, 3)
    else {
        panic!()
    };
    assert_eq!((interval_us, burst), (6_000_000, 3));
}
