//! The rendered HTTP responses: headers, bodies and SSE framing.

use axum::response::Response;

use super::*;
use crate::pipeline::output::Item;

async fn body_text(r: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn augur_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-augur-emulated", HeaderValue::from_static("tools"));
    h
}

#[tokio::test]
async fn a_whole_answer_renders_as_json() {
    let v = json!({"model": "test-model", "message": {"role": "assistant", "content": "Hi <there>"},
        "done": true, "done_reason": "stop", "prompt_eval_count": 1, "eval_count": 2});
    let r = render(
        meta(),
        Output::Full {
            value: v,
            headers: augur_headers(),
        },
        None,
    );
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    assert_eq!(
        body_text(r).await,
        "{\"id\":\"msg_123\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"test-model\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \\u003cthere\\u003e\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}\n"
    );
}

/// A stream answer rendered with `headers`, and the sender that feeds it.
fn streaming(headers: HeaderMap) -> (mpsc::Sender<Item>, Response) {
    let (tx, rx) = mpsc::channel(8);
    (tx, render(meta(), Output::Stream { rx, headers }, None))
}

/// The events `r` writes once `items` are sent on `tx`. The sender stays
/// open until the body ends: the renderer itself must end the stream.
async fn events_after(
    tx: mpsc::Sender<Item>,
    r: Response,
    items: Vec<Item>,
) -> Vec<(String, Value)> {
    for item in items {
        tx.send(item).await.unwrap();
    }
    let events = parse_sse(&body_text(r).await);
    drop(tx);
    events
}

fn kinds(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

fn parse_sse(text: &str) -> Vec<(String, Value)> {
    assert!(text.ends_with("\n\n"), "{text}");
    text.split_terminator("\n\n")
        .map(|frame| {
            let (event, data) = frame.split_once('\n').unwrap();
            let name = event.strip_prefix("event: ").unwrap().to_string();
            let data = data.strip_prefix("data: ").unwrap();
            assert_eq!(serde_json::from_str::<Value>(data).unwrap()["type"], name);
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_stream_renders_as_sse_events() {
    let (tx, r) = streaming(augur_headers());
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(r.headers()["cache-control"], "no-cache");
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    let items = vec![
        Ok(chunk(
            json!({"role": "assistant", "content": "Let me check."}),
        )),
        Ok(chunk(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_x1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}
            ]}),
        )),
        Ok(done("stop", 12, 8)),
        // Nothing after the done chunk is read.
        Ok(chunk(json!({"role": "assistant", "content": "late"}))),
    ];
    let events = events_after(tx, r, items).await;
    assert_eq!(
        kinds(&events),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[4].1["content_block"]["id"], "call_x1");
    assert_eq!(events[5].1["delta"]["partial_json"], "{\"city\":\"Paris\"}");
    assert_eq!(
        events[7].1,
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"input_tokens": 12, "output_tokens": 8}})
    );
}

#[tokio::test]
async fn events_go_out_before_the_stream_ends() {
    use futures_util::StreamExt;
    let (tx, r) = streaming(HeaderMap::new());
    let mut frames = r.into_body().into_data_stream();
    tx.send(Ok(chunk(json!({"role": "assistant", "content": "Hi"}))))
        .await
        .unwrap();
    // Each event is its own frame, available while the producer is still open.
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(String::from_utf8(frames.next().await.unwrap().unwrap().to_vec()).unwrap());
    }
    assert!(got[0].starts_with("event: message_start\n"));
    assert!(got[1].starts_with("event: content_block_start\n"));
    assert!(got[2].starts_with("event: content_block_delta\n"));
    drop(tx);
    assert!(frames.next().await.is_none());
}

#[tokio::test]
async fn a_mid_stream_error_ends_with_an_error_event() {
    let (tx, r) = streaming(HeaderMap::new());
    let items = vec![
        Ok(chunk(json!({"role": "assistant", "content": "Hal"}))),
        Err(ProxyError::UpstreamTimeout(30_000)),
        Ok(done("stop", 1, 1)),
    ];
    let events = events_after(tx, r, items).await;
    assert_eq!(
        kinds(&events),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "error"
        ]
    );
    assert_eq!(
        events[3].1,
        json!({"type": "error", "error": {"type": "api_error", "message": "upstream timed out after 30000 ms"}})
    );
}

#[tokio::test]
async fn an_error_first_is_the_only_event() {
    let (tx, r) = streaming(HeaderMap::new());
    let limited = ProxyError::Limited {
        status: StatusCode::TOO_MANY_REQUESTS,
        message: "slow down".into(),
        headers: HeaderMap::new(),
    };
    let events = events_after(tx, r, vec![Err(limited)]).await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].1["error"],
        json!({"type": "rate_limit_error", "message": "slow down"})
    );
}

#[test]
fn meta_comes_from_the_translation() {
    let t = tr(
        json!({"model": "gemma3", "max_tokens": 5, "thinking": {"type": "disabled"},
        "messages": [{"role": "user", "content": "Hello, world!"}]}),
    );
    let m = Meta::new(&t);
    assert_eq!(m.model, "gemma3");
    assert_eq!(m.estimated_input_tokens, 4);
    assert!(!m.show_thinking);
    assert!(m.id.starts_with("msg_"));
}
