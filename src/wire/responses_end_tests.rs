//! Unit tests of `responses_end`.

use super::*;

fn data(event: &Bytes) -> (String, Value) {
    let text = std::str::from_utf8(event).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let data = rest.strip_prefix("data: ").unwrap().trim_end();
    (head.to_string(), serde_json::from_str(data).unwrap())
}

#[test]
fn failed_and_error_events_have_their_type_and_number() {
    let (head, v) = data(&failed_event("resp_1", "m", 7, 502, "cut"));
    assert_eq!(head, "event: response.failed");
    assert_eq!(v["type"], "response.failed");
    assert_eq!(v["sequence_number"], 7);
    assert_eq!(v["response"]["status"], "failed");
    assert_eq!(v["response"]["id"], "resp_1");
    assert_eq!(
        v["response"]["error"],
        json!({"code": "api_error", "message": "cut"})
    );
    let event = error_event(0, 429, "slow");
    assert!(event.ends_with(b"\n\n"));
    let (head, v) = data(&event);
    assert_eq!(head, "event: error");
    assert_eq!(
        v,
        json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow",
               "param": null, "sequence_number": 0})
    );
}
