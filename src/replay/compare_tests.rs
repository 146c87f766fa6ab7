//! Unit tests of `compare`.

use super::*;
use serde_json::json;

fn seen(status: u16, body: &str, validation: Option<&str>) -> Seen {
    let mut headers = Map::new();
    if let Some(v) = validation {
        headers.insert("x-augur-validation".into(), json!(v));
    }
    headers.insert("x-augur-upstream".into(), json!(format!("u{status}")));
    Seen {
        status,
        body: body.into(),
        headers,
        done: Map::new(),
    }
}

#[test]
fn times_ids_and_the_upstream_name_are_not_differences() {
    let a = seen(200, "{\"id\":\"a\",\"created_at\":\"1\",\"x\":1}\n", None);
    let mut b = seen(200, "{\"x\":1,\"id\":\"b\",\"created_at\":\"2\"}\n", None);
    b.headers.insert("x-augur-upstream".into(), json!("other"));
    assert!(differences(&a, &b).is_empty());
    let c = seen(422, "{\"x\":2}\n", Some("invalid"));
    assert_eq!(
        differences(&a, &c),
        vec![
            "status 200 -> 422".to_string(),
            "answer body".to_string(),
            "decisions: x-augur-validation: (none) -> invalid".to_string(),
        ]
    );
}
