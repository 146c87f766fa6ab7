//! Unit tests of `verdict`.

use http::HeaderValue;

use super::*;

#[test]
fn only_a_clean_200_is_kept() {
    let mut h = HeaderMap::new();
    h.insert("x-augur-repaired", HeaderValue::from_static("code_fence"));
    assert!(clean_head(StatusCode::OK, &h));
    assert!(!clean_head(StatusCode::UNPROCESSABLE_ENTITY, &h));
    h.insert("x-augur-validation", HeaderValue::from_static("invalid"));
    assert!(!clean_head(StatusCode::OK, &h));
}

#[test]
fn a_stream_is_kept_only_when_it_ended_with_its_final_chunk() {
    let nd = BodyKind::Ndjson;
    let done = b"{\"done\":false}\n{\"done\":true,\"eval_count\":3}\n";
    assert!(clean_body("/api/chat", nd, done));
    assert!(!clean_body("/api/chat", nd, b"{\"done\":false}\n"));
    let err = b"{\"done\":false}\n{\"error\":\"cut\"}\n";
    assert!(!clean_body("/api/chat", nd, err));
    let invalid = b"{\"done\":true,\"augur_validation\":\"invalid\"}\n";
    assert!(!clean_body("/api/chat", nd, invalid));
    // The same words in the model's text are escaped: still clean.
    let text = br#"{"message":{"content":"\"augur_model\": x"},"done":true}"#;
    assert!(clean_body("/api/chat", nd, text));

    let sse = BodyKind::Sse;
    let openai = b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n";
    assert!(clean_body("/v1/chat/completions", sse, openai));
    assert!(!clean_body("/v1/chat/completions", sse, b"data: {}\n\n"));
    let failed = b"data: {\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n";
    assert!(!clean_body("/v1/chat/completions", sse, failed));
    let msgs = b"event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n";
    assert!(clean_body("/v1/messages", sse, msgs));
    let errored = b"event: message_start\ndata: {}\n\nevent: error\ndata: {}\n\n";
    assert!(!clean_body("/v1/messages", sse, errored));
    let resp = b"event: response.created\ndata: {}\n\nevent: response.completed\ndata: {}\n\n";
    assert!(clean_body("/v1/responses", sse, resp));

    let whole = BodyKind::Whole;
    assert!(clean_body("/api/generate", whole, b"{\"done\":true}\n"));
    assert!(!clean_body("/api/generate", whole, b"{\"done\":false}"));
    assert!(clean_body(
        "/v1/chat/completions",
        whole,
        b"{\"choices\":[]}"
    ));
    assert!(!clean_body("/v1/chat/completions", whole, b""));
}
