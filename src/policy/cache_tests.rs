//! Unit tests of `cache`.

use super::*;

fn raw(ttl: &str, max_bytes: u64) -> RawCache {
    RawCache {
        ttl: ttl.into(),
        max_bytes,
        ..RawCache::default()
    }
}

#[test]
fn durations_read_as_policies_write_them() {
    let ms = |n| Some(Duration::from_millis(n));
    assert_eq!(parse_duration("500ms"), ms(500));
    assert_eq!(parse_duration("10m"), ms(600_000));
    assert_eq!(parse_duration("2h"), ms(7_200_000));
    assert_eq!(parse_duration("1d"), ms(86_400_000));
    for bad in [
        "",
        "10",
        "m",
        "-1s",
        "1.5s",
        "10 m",
        "1w",
        "99999999999999999s",
    ] {
        assert_eq!(parse_duration(bad), None, "{bad}");
    }
    assert_eq!(show_duration(Duration::from_secs(600)), "10m");
    assert_eq!(show_duration(Duration::from_millis(1500)), "1500ms");
}

#[test]
fn a_block_is_checked_when_it_loads() {
    let ok = compile("f", "models.x", &raw("10m", 1 << 20)).unwrap();
    assert_eq!(ok.ttl, Duration::from_secs(600));
    assert!(ok.charge_hits);
    assert_eq!(ok.share, None);
    let err = |c: RawCache| compile("f", "models.x", &c).unwrap_err().to_string();
    assert!(err(raw("0s", 1 << 20)).contains("models.x.cache.ttl"));
    assert!(err(raw("30d", 1 << 20)).contains("models.x.cache.ttl"));
    assert!(err(raw("soon", 1 << 20)).contains("not a duration"));
    assert!(err(raw("1m", 10)).contains("models.x.cache.max_bytes"));
    let redis = RawCache {
        store: Some("redis".into()),
        ..raw("1m", 1 << 20)
    };
    assert!(err(redis).contains("only \"memory\""));
    let empty_share = RawCache {
        share: Some(String::new()),
        ..raw("1m", 1 << 20)
    };
    assert!(err(empty_share).contains("models.x.cache.share"));
    let memory = RawCache {
        store: Some("memory".into()),
        share: Some("evals".into()),
        charge_hits: Some(false),
        ..raw("1m", 1 << 20)
    };
    let c = compile("f", "models.x", &memory).unwrap();
    assert_eq!((c.share.as_deref(), c.charge_hits), (Some("evals"), false));
}
