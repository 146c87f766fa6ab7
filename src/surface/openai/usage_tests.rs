//! Unit tests of `usage`.

use http_body_util::BodyExt;

use super::*;
use serde_json::Value;

#[test]
fn only_a_stream_without_stream_options_is_asked() {
    let asked = ask_usage(br#" {"model":"m","stream":true}"#).unwrap();
    assert_eq!(
        &asked[..],
        br#" {"stream_options":{"include_usage":true},"model":"m","stream":true}"#
    );
    let v: Value = serde_json::from_slice(&asked).unwrap();
    assert_eq!(v["stream_options"]["include_usage"], true);
    assert!(ask_usage(br#"{"model":"m"}"#).is_none());
    assert!(ask_usage(br#"{"stream":false}"#).is_none());
    let own = br#"{"stream":true,"stream_options":{"include_usage":false}}"#;
    assert!(ask_usage(own).is_none());
    assert!(ask_usage(b"not json").is_none());
}

async fn strip(frames: &[&str]) -> (String, Option<Counts>) {
    let frames: Vec<Result<Bytes, std::io::Error>> = frames
        .iter()
        .map(|f| Ok(Bytes::from(f.to_string())))
        .collect();
    let usage = Arc::new(Usage::default());
    let body = StripUsage::new(
        Body::from_stream(futures_util::stream::iter(frames)),
        usage.clone(),
    );
    let bytes = body.collect().await.unwrap().to_bytes();
    (String::from_utf8(bytes.to_vec()).unwrap(), usage.counts())
}

const CHUNK: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
const USAGE: &str = "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,\"total_tokens\":12}}\n\n";
const DONE: &str = "data: [DONE]\n\n";

#[tokio::test]
async fn the_usage_event_is_read_and_left_out() {
    let counts = Some(Counts {
        input: 5,
        output: 7,
        eval_ns: None,
    });
    let want = format!("{CHUNK}{CHUNK}{DONE}");
    assert_eq!(
        strip(&[CHUNK, CHUNK, USAGE, DONE]).await,
        (want.clone(), counts)
    );
    // Events cut anywhere across frames.
    let all = format!("{CHUNK}{CHUNK}{USAGE}{DONE}");
    for cut in 1..all.len() {
        let (a, b) = all.split_at(cut);
        assert_eq!(strip(&[a, b]).await, (want.clone(), counts), "cut at {cut}");
    }
}

#[tokio::test]
async fn a_stream_without_usage_passes_unchanged() {
    let all = format!("{CHUNK}{CHUNK}{DONE}");
    assert_eq!(strip(&[CHUNK, CHUNK, DONE]).await, (all.clone(), None));
    // A content chunk that names an empty choices list in its text.
    let text = "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"choices\\\":[]\"}}]}\n\n";
    assert_eq!(strip(&[text, DONE]).await, (format!("{text}{DONE}"), None));
    // An unfinished last event is passed on at the end.
    assert_eq!(
        strip(&[CHUNK, "data: {"]).await.0,
        format!("{CHUNK}data: {{")
    );
}
