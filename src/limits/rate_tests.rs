//! Unit tests of `rate`.

use super::*;

#[test]
fn the_last_check_of_each_key_is_kept_and_refills() {
    let limiters = RateLimiters::default();
    let rate = RateLimit {
        requests_per_minute: Some(60),
        burst: Some(2),
        tokens_per_minute: None,
    };
    assert!(limiters.check(Scope::Principal, &rate, "ip:1").is_ok());
    let views = limiters.views(10);
    assert_eq!(views, [(Scope::Principal, "ip:1".to_string(), 2, 1)]);
    assert!(limiters.check(Scope::Principal, &rate, "ip:1").is_ok());
    assert!(limiters.check(Scope::Principal, &rate, "ip:1").is_err());
    assert_eq!(limiters.views(10)[0].3, 0);
    // One request a second: two seconds later the burst is full again.
    let seen = Seen {
        burst: 2,
        remaining: 0,
        interval: Duration::from_secs(1),
        at: Instant::now() - Duration::from_secs(2),
    };
    assert_eq!(seen.remaining_now(Instant::now()), 2);
    for i in 0..MAX_SEEN + 10 {
        let _ = limiters.check(Scope::Model, &rate, &format!("ip:{i}\0m"));
    }
    assert_eq!(limiters.seen.lock().unwrap().len(), MAX_SEEN);
}
