//! Unit tests of `tokens`.

use super::*;

#[test]
fn debt_blocks_until_refilled() {
    let buckets = TokenBuckets::default();
    let key = BucketKey {
        per_minute: 600,
        who: "ip:1".into(),
    };
    assert!(buckets.check(&key).is_ok());
    buckets.charge(&key, 1200);
    let Err(LimitError::RateLimited { retry_after, .. }) = buckets.check(&key) else {
        panic!("expected 429");
    };
    // -600 at 10 tokens/s: a little over 60 s until positive.
    assert!(
        (60..=61).contains(&retry_after.as_secs()),
        "{retry_after:?}"
    );
}

#[test]
fn refill_caps_at_full() {
    let mut b = Bucket {
        balance: 0.0,
        at: Instant::now() - Duration::from_secs(600),
    };
    b.refill(60, Instant::now());
    assert_eq!(b.balance, 60.0);
}
