//! Unit tests of `listing`.

use serde_json::json;

use super::*;

#[test]
fn listings_merge_in_order_each_model_once() {
    let a = entries(
        json!({"models": [{"name": "a:1", "size": 1}, {"name": "b:1"}]}),
        "models",
    );
    let b = entries(
        json!({"models": [{"name": "b:1", "size": 2}, {"name": "c:1"}]}),
        "models",
    );
    let merged = merge([a, b].into_iter(), "name");
    assert_eq!(
        Value::Array(merged),
        json!([{"name": "a:1", "size": 1}, {"name": "b:1"}, {"name": "c:1"}])
    );
    assert!(entries(json!({"models": null}), "models").is_empty());
}
