//! Unit tests of `marks`.

use serde_json::json;

use super::*;

#[test]
fn marks_write_each_field_once_in_its_shape() {
    let mut done = json!({"done": true});
    let mut m = Marks::of(&mut done).unwrap();
    m.validation(Verdict::Invalid);
    m.violations("missing field `city`".into());
    m.repaired(&["trailing comma", "fence"]);
    m.set_guard("flagged".into());
    assert_eq!(m.guard(), Some("flagged"));
    m.set_tool_risk("high");
    assert_eq!(m.tool_risk(), Some("high"));
    m.confidence(json!(0.42));
    assert_eq!(
        done,
        json!({"done": true, "augur_validation": "invalid",
            "augur_violations": "missing field `city`",
            "augur_repaired": "trailing comma, fence", "augur_guard": "flagged",
            "augur_tool_risk": "high", "augur_confidence": 0.42})
    );
    assert!(Marks::of(&mut json!("text")).is_none());
}
