//! Unit tests of `redact`.

use super::*;
use serde_json::json;

#[test]
fn fields_are_redacted_in_the_line_and_in_the_json_it_holds() {
    let fields = vec!["secret".to_string()];
    let mut line = json!({
        "secret": 1,
        "body": "{\"a\":{\"secret\":\"x\"}}",
        "lines": [{"data": "data: {\"secret\":2}\n"}, {"data": "not json secret\n"}],
    });
    redact(&mut line, &fields);
    assert_eq!(line["secret"], json!(REDACTED));
    assert_eq!(line["body"], json!("{\"a\":{\"secret\":\"[redacted]\"}}"));
    assert_eq!(
        line["lines"][0]["data"],
        json!("data: {\"secret\":\"[redacted]\"}\n")
    );
    assert_eq!(line["lines"][1]["data"], json!("not json secret\n"));
}
