//! Unit tests of `record`.

use super::*;

#[test]
fn a_block_is_checked_when_it_loads() {
    let raw = |path: &str| RawRecord {
        path: path.into(),
        ..RawRecord::default()
    };
    let ok = compile("f", "models.x", &raw("/tmp/x.jsonl")).unwrap();
    assert_eq!((ok.max_bytes, ok.keep), (DEFAULT_BYTES, 3));
    let err = |r: RawRecord| compile("f", "models.x", &r).unwrap_err().to_string();
    assert!(err(raw("")).contains("models.x.record.path"));
    let small = RawRecord {
        max_bytes: Some(10),
        ..raw("a")
    };
    assert!(err(small).contains("models.x.record.max_bytes"));
    let many = RawRecord {
        keep: Some(1000),
        ..raw("a")
    };
    assert!(err(many).contains("models.x.record.keep"));
    let empty = RawRecord {
        redact: vec![String::new()],
        ..raw("a")
    };
    assert!(err(empty).contains("models.x.record.redact"));
}

#[test]
fn the_effective_policy_shows_the_block() {
    let yaml =
        "models:\n  \"gemma3:*\":\n    record: {path: /tmp/g.jsonl, keep: 1, redact: [content]}\n";
    let policy = crate::policy::load_texts(
        &[("p.yaml".to_string(), yaml.to_string())],
        std::path::Path::new("/nonexistent"),
    )
    .unwrap();
    let shown = crate::policy::show::effective(&policy);
    assert_eq!(
        shown["models"][0]["settings"]["record"],
        serde_json::json!({
            "path": "/tmp/g.jsonl", "max_bytes": DEFAULT_BYTES, "keep": 1, "redact": ["content"],
        })
    );
}
