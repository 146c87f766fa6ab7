//! Unit tests of `request`.

use http::HeaderValue;
use serde_json::json;

use super::*;

#[test]
fn deterministic_requests_are_temperature_zero_or_seeded() {
    let chat = "/api/chat";
    assert!(deterministic(chat, &json!({"options": {"temperature": 0}})));
    assert!(deterministic(
        chat,
        &json!({"options": {"temperature": 0.0}})
    ));
    assert!(deterministic(
        chat,
        &json!({"options": {"temperature": 0.7, "seed": 42}})
    ));
    assert!(!deterministic(
        chat,
        &json!({"options": {"temperature": 0.7}})
    ));
    assert!(!deterministic(chat, &json!({"options": {"seed": -1}})));
    assert!(!deterministic(chat, &json!({"temperature": 0})));
    assert!(!deterministic(chat, &json!({})));
    let openai = "/v1/chat/completions";
    assert!(deterministic(openai, &json!({"temperature": 0})));
    assert!(deterministic(openai, &json!({"seed": 7, "temperature": 1})));
    assert!(!deterministic(
        openai,
        &json!({"options": {"temperature": 0}})
    ));
    assert!(deterministic("/v1/messages", &json!({"temperature": 0})));
    assert!(!deterministic("/v1/messages", &json!({"seed": 7})));
    assert!(!deterministic(
        "/v1/responses",
        &json!({"temperature": "0"})
    ));
}

#[test]
fn the_mode_is_the_routes_default_unless_the_body_says() {
    assert!(streams("/api/chat", &json!({})));
    assert!(!streams("/api/generate", &json!({"stream": false})));
    assert!(!streams("/v1/chat/completions", &json!({})));
    assert!(streams("/v1/messages", &json!({"stream": true})));
}

#[test]
fn no_cache_and_no_store_decline() {
    let with = |v: &'static str| {
        let mut h = HeaderMap::new();
        h.append(header::CACHE_CONTROL, HeaderValue::from_static(v));
        declined(&h)
    };
    assert!(with("no-cache"));
    assert!(with("max-age=0, No-Store"));
    assert!(with("no-cache=\"set-cookie\""));
    assert!(!with("max-age=60"));
    assert!(!declined(&HeaderMap::new()));
}
