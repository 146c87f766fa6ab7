//! Request rate limits end to end over real sockets with live policies: per
//! client IP for anonymous callers, per key, and per principal and
//! normalized model, with `RateLimit-*` and `Retry-After` headers; a key's
//! own limit replaces the defaults, and `rate_limit: null` lifts it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client, header,
    live::{Live, bounded, chat, error_text, header_u64, sha256_hex},
};

#[tokio::test]
async fn rate_limits_apply_per_principal_and_per_model() {
    bounded(20, async {
        let policy = format!(
            "defaults:\n  rate_limit: {{requests_per_minute: 3}}\n\
             models:\n  \"gemma3:*\":\n    rate_limit: {{requests_per_minute: 1}}\n\
             auth:\n  keys:\n    \
             - {{id: big, key_sha256: {}, rate_limit: {{requests_per_minute: 100}}}}\n    \
             - {{id: other, key_sha256: {}}}\n    \
             - {{id: free, key_sha256: {}, rate_limit: null}}\n",
            sha256_hex("big-secret"),
            sha256_hex("other-secret"),
            sha256_hex("free-secret"),
        );
        let live = Live::start(&policy).await;

        // Anonymous: per client IP, `defaults.rate_limit`.
        for remaining in [2, 1, 0] {
            let r = chat(&live, "llama3.2", None).await;
            assert_eq!(r.status(), 200);
            assert_eq!(header_u64(&r, "ratelimit-limit"), 3);
            assert_eq!(header_u64(&r, "ratelimit-remaining"), remaining);
            header_u64(&r, "ratelimit-reset");
        }
        let r = chat(&live, "llama3.2", None).await;
        assert_eq!(r.status(), 429);
        let retry = header_u64(&r, "retry-after");
        // One request every 20 s, rounded up to whole seconds.
        assert!((1..=20).contains(&retry), "{retry}");
        assert_eq!(header_u64(&r, "ratelimit-limit"), 3);
        assert_eq!(header_u64(&r, "ratelimit-remaining"), 0);
        assert_eq!(header_u64(&r, "ratelimit-reset"), retry);
        assert!(error_text(r).await.contains("rate limit"));
        // Listing models does not count.
        let r = client().get(live.url("/api/tags")).send().await.unwrap();
        assert_eq!(r.status(), 200);

        // A key's own rate_limit replaces the defaults.
        for _ in 0..5 {
            let r = chat(&live, "llama3.2", Some("big-secret")).await;
            assert_eq!(r.status(), 200);
            assert_eq!(header_u64(&r, "ratelimit-limit"), 100);
        }
        // Per (principal, model), for the normalized name.
        let r = chat(&live, "gemma3", Some("big-secret")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header_u64(&r, "ratelimit-limit"), 1);
        assert_eq!(header_u64(&r, "ratelimit-remaining"), 0);
        let r = chat(&live, "gemma3:latest", Some("big-secret")).await;
        assert_eq!(r.status(), 429);
        let retry = header_u64(&r, "retry-after");
        assert!((1..=60).contains(&retry), "{retry}");
        assert_eq!(header_u64(&r, "ratelimit-limit"), 1);
        let r = chat(&live, "llama3.2", Some("big-secret")).await;
        assert_eq!(r.status(), 200, "other models are not limited by gemma3's");

        // Another principal has its own allowances. `other` uses the
        // defaults (3 a minute); the request refused by the per-model limit
        // still spent one of them, as the principal scope is checked first.
        let r = chat(&live, "gemma3", Some("other-secret")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header_u64(&r, "ratelimit-remaining"), 0);
        let r = chat(&live, "gemma3", Some("other-secret")).await;
        assert_eq!(r.status(), 429);
        let r = chat(&live, "llama3.2", Some("other-secret")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header_u64(&r, "ratelimit-limit"), 3);
        assert_eq!(header_u64(&r, "ratelimit-remaining"), 0);
        let r = chat(&live, "llama3.2", Some("other-secret")).await;
        assert_eq!(r.status(), 429);
        assert_eq!(header_u64(&r, "ratelimit-limit"), 3);

        // `rate_limit: null` on a key: no per-principal limit at all.
        for _ in 0..5 {
            let r = chat(&live, "llama3.2", Some("free-secret")).await;
            assert_eq!(r.status(), 200);
            assert!(header(&r, "ratelimit-limit").is_none());
        }
    })
    .await;
}
