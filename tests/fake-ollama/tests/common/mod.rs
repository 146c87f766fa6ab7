//! A raw HTTP/1.1 client for the fake's wire tests, so the exact bytes (content types,
//! trailing newlines, chunk sequences, SSE frames, abrupt cuts) are visible.

#![allow(dead_code)]

use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The chunked body ended with its terminating chunk.
    pub complete: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    pub fn lines(&self) -> Vec<Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

pub async fn call(fake: &FakeOllama, method: &str, path: &str, body: Option<&[u8]>) -> Resp {
    let mut s = tokio::net::TcpStream::connect(fake.addr()).await.unwrap();
    let body = body.unwrap_or(b"");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nX-Forwarded-For: 10.0.0.1\r\nContent-Length: {}\r\n\r\n",
        fake.addr(),
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let rest = &raw[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(": ")
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let (body, complete) = if chunked {
        dechunk(rest)
    } else {
        (rest.to_vec(), true)
    };
    Resp {
        status,
        headers,
        body,
        complete,
    }
}

pub fn dechunk(mut b: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return (out, true);
        }
        let start = eol + 2;
        if b.len() < start + n + 2 {
            out.extend_from_slice(&b[start.min(b.len())..]);
            return (out, false);
        }
        out.extend_from_slice(&b[start..start + n]);
        b = &b[start + n + 2..];
    }
}

pub async fn post(fake: &FakeOllama, path: &str, v: Value) -> Resp {
    call(fake, "POST", path, Some(v.to_string().as_bytes())).await
}

pub fn user(text: &str) -> Value {
    json!([{ "role": "user", "content": text }])
}

pub fn weather_tool() -> Value {
    json!([{ "type": "function", "function": { "name": "get_weather", "parameters": {
        "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } } }])
}

/// The events of an SSE body: `event:` name and parsed `data:` JSON, checking that every
/// frame is exactly `event: NAME\ndata: JSON\n\n`.
pub fn sse(r: &Resp) -> Vec<(String, Value)> {
    let text = r.text();
    assert!(text.ends_with("\n\n"), "unterminated SSE body: {text}");
    text.trim_end_matches('\n')
        .split("\n\n")
        .map(|frame| {
            let (name, data) = frame.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_owned();
            let data = data.strip_prefix("data: ").unwrap();
            assert!(!data.contains('\n'));
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

/// A whole answer or handler error as Go's `json.Encoder` writes it: `status`,
/// `application/json`, a trailing newline; its JSON.
pub fn encoded(r: &Resp, status: u16) -> Value {
    assert_eq!(
        (r.status, r.header("content-type")),
        (status, Some("application/json"))
    );
    assert!(r.text().ends_with("}\n"), "{}", r.text());
    r.json()
}

/// The stream headers of an SSE answer (Anthropic and Responses surfaces).
pub fn assert_stream_headers(r: &Resp) {
    assert_eq!(
        (r.header("content-type"), r.header("cache-control")),
        (Some("text/event-stream"), Some("no-cache"))
    );
}

/// The chat handler's 404 for the unknown model `nope`, in a surface's error shape.
pub fn assert_unknown_model(r: &Resp) {
    assert_eq!(
        (r.status, r.json()["error"]["type"].as_str()),
        (404, Some("not_found_error"))
    );
    assert_eq!(r.json()["error"]["message"], "model 'nope' not found");
}

/// A runner failure before a stream's first event: the surface's error object, with the
/// stream's headers.
pub fn assert_failed_before_stream(r: &Resp) {
    assert_eq!(
        (
            r.status,
            r.header("content-type"),
            r.header("cache-control")
        ),
        (500, Some("application/json"), Some("no-cache"))
    );
    assert_eq!(r.json()["error"]["type"], "api_error");
}

/// The names of a list of events.
pub fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

/// The keys of a JSON object, in order.
pub fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}
