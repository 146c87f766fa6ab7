//! Unit tests of `terminator`.

use super::*;

fn data(ending: &Bytes) -> (String, Value) {
    let text = std::str::from_utf8(ending).unwrap();
    let (event, data) = text.trim_start_matches('\n').split_once('\n').unwrap();
    let data = data.strip_prefix("data: ").unwrap().trim_end();
    (event.to_string(), serde_json::from_str(data).unwrap())
}

#[test]
fn a_responses_stream_ends_with_response_failed_after_its_last_event() {
    let mut trail = Trail::default();
    trail.observe(
        b"event: response.created\ndata: {\"response\":{\"id\":\"resp_9\",\"model\":\"m:1\",\
          \"status\":\"in_progress\"},\"sequence_number\":0,\"type\":\"response.created\"}\n\n",
    );
    trail.observe(
        b"event: response.output_text.delta\r\ndata: {\"delta\":\"say \\\"sequence_number\\\":9\",\
          \"sequence_number\": 4,\"type\":\"response.output_text.delta\"}\r\n\r\n",
    );
    let ending = Terminator::Responses
        .ending("cut", 1, Some(&trail))
        .unwrap();
    assert!(ending.starts_with(b"\nevent: response.failed\ndata: "));
    assert!(ending.ends_with(b"\n\n"));
    let (event, v) = data(&ending);
    assert_eq!(event, "event: response.failed");
    assert_eq!(v["type"], "response.failed");
    assert_eq!(v["sequence_number"], 5);
    assert_eq!(v["response"]["id"], "resp_9");
    assert_eq!(v["response"]["model"], "m:1");
    assert_eq!(v["response"]["status"], "failed");
    assert_eq!(v["response"]["error"]["message"], "cut");
}

#[test]
fn a_responses_stream_cut_before_it_opened_ends_with_an_error_event() {
    let ending = Terminator::Responses.ending("cut", 2, None).unwrap();
    let (event, v) = data(&ending);
    assert_eq!(event, "event: error");
    assert_eq!(v["type"], "error");
    assert_eq!(v["sequence_number"], 0);
    assert_eq!(v["message"], "cut");
    let ct = HeaderValue::from_static("text/event-stream");
    assert_eq!(
        Terminator::for_content_type(Some(&ct), Flavor::OpenAi, true),
        Terminator::Responses
    );
    assert_eq!(
        Terminator::for_content_type(Some(&ct), Flavor::OpenAi, false),
        Terminator::Sse(Flavor::OpenAi)
    );
}
