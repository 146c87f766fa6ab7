//! Unit tests of `output`.

use super::*;
use crate::pipeline::job::{Answered, Reason};

#[test]
fn fallback_headers_are_never_dropped() {
    let report = |model: &str| Report {
        fallback: Some(Answered {
            model: model.to_string(),
            reason: Reason::Invalid,
        }),
        ..Report::default()
    };
    let h = report("big:latest").headers();
    assert_eq!(h["x-augur-model"], "big:latest");
    assert_eq!(h["x-augur-fallback"], "invalid");
    let h = report("big\r\nX-Evil: 1\u{7f}").headers();
    assert_eq!(h["x-augur-model"], "big%0D%0AX-Evil: 1%7F");
    assert_eq!(h["x-augur-fallback"], "invalid");
    assert!(!h.contains_key("x-evil"));
}

#[test]
fn fallback_models_that_failed_are_reported_as_failed() {
    let h = Report {
        invalid: true,
        fallback_failed: true,
        ..Report::default()
    }
    .headers();
    assert_eq!(h["x-augur-fallback"], "failed");
    assert_eq!(h["x-augur-validation"], "invalid");
    assert!(!h.contains_key("x-augur-model"));
}
