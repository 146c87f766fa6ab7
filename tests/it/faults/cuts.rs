//! Upstream cuts: a whole answer never comes back as a complete 200, a
//! stream cut mid-line ends with an error line of its own, and a Responses
//! stream, forwarded or augur's own, ends with `response.failed`.

use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use super::{
    Augur,
    common::{self, start_with},
    person, weather_tool,
};

/// How a client fared with a whole answer the upstream cut.
#[derive(Debug, PartialEq, Eq, Hash)]
enum Outcome {
    /// 502 with an error body in the route's shape.
    BadGateway,
    /// A status line, then a body that ends before it is complete.
    Incomplete(u16),
    /// The connection closed before a status line.
    NoResponse,
}

async fn ask_whole(augur: &Augur, path: &str, body: &Value) -> Outcome {
    let sent = common::client()
        .post(format!("{}{path}", augur.url))
        .json(body)
        .send()
        .await;
    let Ok(r) = sent else {
        return Outcome::NoResponse;
    };
    let status = r.status().as_u16();
    let openai = path.starts_with("/v1/");
    match r.bytes().await {
        Ok(bytes) => {
            assert_eq!(status, 502, "a cut answer came back complete: {bytes:?}");
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            if openai {
                assert!(v["error"]["message"].is_string(), "{v}");
            } else {
                assert!(v["error"].is_string(), "{v}");
            }
            Outcome::BadGateway
        }
        Err(_) => Outcome::Incomplete(status),
    }
}

#[tokio::test]
async fn a_whole_answer_the_upstream_cuts_is_never_a_complete_200() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let mut seen = std::collections::HashMap::new();
    for i in 0..30u64 {
        // Cut before the first byte, after one, or half way; at once or
        // after a pause; with and without a declared length.
        let cut_bytes = [Some(0), Some(1), None][(i % 3) as usize];
        let cut_ms = if i / 3 % 2 == 0 { 0 } else { 50 };
        let options = json!({"cut_bytes": cut_bytes, "cut_ms": cut_ms,
            "declare_length": i / 6 % 2 == 0});
        let mut body = json!({"model": "mid-cut", "stream": false, "options": options,
            "messages": [{"role": "user", "content": "hi"}]});
        // Passthrough, then augur's own whole-answer reads (native and OpenAI).
        let path = match i / 12 {
            0 => "/api/chat",
            1 => {
                body["format"] = person();
                "/api/chat"
            }
            _ => {
                body["tools"] = json!([weather_tool()]);
                "/v1/chat/completions"
            }
        };
        let outcome = ask_whole(&augur, path, &body).await;
        let passthrough = i < 12;
        if cut_bytes == Some(0) || !passthrough {
            assert_eq!(outcome, Outcome::BadGateway, "try {i}: {path} {options}");
        } else {
            assert!(
                matches!(outcome, Outcome::Incomplete(200) | Outcome::BadGateway),
                "try {i}: {options}: {outcome:?}"
            );
        }
        *seen.entry(outcome).or_insert(0) += 1;
    }
    eprintln!("{seen:?}");
}

/// Every line of an NDJSON body, parsed.
fn parsed_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?} in {text:?}")))
        .collect()
}

#[tokio::test]
async fn a_stream_cut_mid_line_ends_with_an_error_line_of_its_own() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let chat = |extra: Value| {
        let mut body = json!({"model": "mid-cut", "messages": [{"role": "user", "content": "hi"}]});
        if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
            b.extend(e);
        }
        body
    };
    let cases = [
        ("/api/chat", chat(json!({}))),
        ("/api/generate", json!({"model": "mid-cut", "prompt": "hi"})),
        // augur's own stream reading, validated as it passes.
        ("/api/chat", chat(json!({"format": "json"}))),
    ];
    for (path, body) in cases {
        let r = common::post(&augur, path, &body).await;
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        let lines = parsed_lines(&text);
        assert!(lines.len() >= 2, "{path}: {text}");
        let last = lines.last().unwrap();
        assert!(last["error"].is_string(), "{path}: {text}");
        assert!(text.ends_with('\n'));
    }
}

/// An upstream on a raw socket that answers each request with a head
/// declaring a whole JSON body, the first `sent` bytes of it and a close,
/// all in one write: the head and the cut reach augur together.
async fn cutting_upstream(sent: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The request head and its (small) body.
                while !request.windows(4).any(|w| w == b"\r\n\r\n") || !request.ends_with(b"}") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body =
                    br#"{"model":"m","message":{"role":"assistant","content":"hi"},"done":true}"#;
                let mut answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                answer.extend_from_slice(&body[..sent]);
                let _ = socket.write_all(&answer).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_head_that_comes_with_the_cut_is_never_lost() {
    for sent in [0, 1, 20] {
        let upstream = cutting_upstream(sent).await;
        let augur = start_with(&upstream, |_| {}).await;
        let body = json!({"model": "m", "stream": false,
            "messages": [{"role": "user", "content": "hi"}]});
        for _ in 0..10 {
            let outcome = ask_whole(&augur, "/api/chat", &body).await;
            let expected = if sent == 0 {
                Outcome::BadGateway
            } else {
                Outcome::Incomplete(200)
            };
            assert_eq!(outcome, expected, "{sent} bytes before the cut");
        }
    }
}

/// A `/v1/responses` stream through augur: its events, and whether augur
/// ran its pipeline on it (`x-augur-emulated`) or forwarded it.
async fn responses_stream(augur: &Augur, body: &Value) -> Vec<(String, Value)> {
    let r = common::post(augur, "/v1/responses", body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        common::header(&r, "content-type"),
        Some("text/event-stream")
    );
    let text = r.text().await.unwrap();
    assert!(text.ends_with("\n\n"), "{text}");
    common::events(&text)
}

#[tokio::test]
async fn a_forwarded_responses_stream_cut_ends_with_response_failed() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    for model in ["mid-cut", "stream-cut"] {
        // Nothing augur acts on: the upstream's own events, forwarded.
        let body = json!({"model": model, "input": "hi", "stream": true});
        let events = responses_stream(&augur, &body).await;
        assert_eq!(fake.requests("/api/chat"), 0, "{model}: forwarded");
        let (kind, last) = events.last().unwrap();
        assert_eq!(kind, "response.failed", "{model}: {events:?}");
        assert_eq!(last["type"], "response.failed", "{model}: {last}");
        // A cut inside an event may leave its `event:` line without data:
        // SSE clients dispatch no such event.
        let sent: Vec<&(String, Value)> = events.iter().filter(|(_, d)| !d.is_null()).collect();
        let before = &sent[sent.len() - 2].1;
        assert_eq!(
            last["sequence_number"].as_u64(),
            before["sequence_number"].as_u64().map(|n| n + 1),
            "{model}: {events:?}"
        );
        let created = &events[0];
        assert_eq!(created.0, "response.created", "{model}");
        let response = &last["response"];
        assert_eq!(response["id"], created.1["response"]["id"], "{model}");
        assert_eq!(response["model"], created.1["response"]["model"], "{model}");
        assert_eq!(response["status"], "failed", "{model}");
        assert!(response["error"]["message"].is_string(), "{model}: {last}");
        // Every event has its type, as augur's own streams end.
        for (kind, data) in sent {
            assert_eq!(
                data["type"].as_str(),
                Some(kind.as_str()),
                "{model}: {data}"
            );
        }
    }
    // augur's own Responses stream (tools emulated) ends the same way.
    let mut body = json!({"model": "mid-cut", "input": "hi", "stream": true});
    body["tools"] = json!([{"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {}}}]);
    let events = responses_stream(&augur, &body).await;
    assert_eq!(fake.requests("/v1/responses"), 2, "the pipeline ran");
    let (kind, last) = events.last().unwrap();
    assert_eq!(kind, "response.failed", "{events:?}");
    assert_eq!(last["response"]["status"], "failed");
}
