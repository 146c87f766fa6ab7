//! Byte-level details of Ollama's HTTP output: Go-style JSON escaping, Go `time.Time`
//! timestamps, Go `%q` quoting, content types, error bodies and the tracked NDJSON/SSE
//! body that notices when a client goes away mid-stream.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::Stream;
use serde::Serialize;

use crate::Counters;

/// `c.JSON` in gin: `application/json; charset=utf-8`, no trailing newline.
pub const JSON_UTF8: &str = "application/json; charset=utf-8";
/// Error written before the first stream chunk, and `json.Encoder` bodies of the OpenAI layer.
pub const JSON: &str = "application/json";
pub const NDJSON: &str = "application/x-ndjson";
pub const SSE: &str = "text/event-stream";
pub const TEXT_UTF8: &str = "text/plain; charset=utf-8";

/// Serialise like Go's `encoding/json`: serde's compact output, then escape `<`, `>`, `&`,
/// U+2028 and U+2029 the way Go does. Those bytes only occur inside JSON strings.
pub fn go_json<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    let raw = serde_json::to_vec(v).unwrap_or_default();
    go_escape(raw)
}

pub fn go_escape(v: Vec<u8>) -> Vec<u8> {
    if !v.iter().any(|&b| matches!(b, b'<' | b'>' | b'&' | 0xE2)) {
        return v;
    }
    let mut out = Vec::with_capacity(v.len() + 32);
    let mut i = 0;
    while i < v.len() {
        match v[i] {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            0xE2 if v.get(i + 1) == Some(&0x80) && matches!(v.get(i + 2), Some(0xA8 | 0xA9)) => {
                let esc: &[u8] = if v[i + 2] == 0xA8 {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                };
                out.extend_from_slice(esc);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    out
}

/// A `float64` as Go prints it (integral values without a fraction).
pub fn go_float(f: f64) -> serde_json::Value {
    if f.fract() == 0.0 && f.abs() < 9.0e18 {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Value::from(f)
    }
}

/// Go's `time.Now().UTC()` marshalled as JSON: RFC 3339 with nanoseconds, trailing zeros
/// trimmed (the fraction disappears entirely when it is zero), `Z` suffix.
pub fn go_time(t: time::OffsetDateTime) -> String {
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let ns = t.nanosecond();
    if ns != 0 {
        let frac = format!("{ns:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

pub fn now() -> String {
    go_time(time::OffsetDateTime::now_utc())
}

/// Go's `%q` for a byte string (enough for JSON text: quotes, backslashes, control bytes).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub fn respond(status: u16, ctype: &'static str, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// 200/201 with an empty body and no Content-Type, as gin's `c.Status(...)`.
pub fn empty(status: u16) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r
}

/// A native Ollama error. `ctype` is `JSON_UTF8` for handler errors and `JSON` for errors
/// raised by the runner before the first chunk of a streaming response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub msg: String,
    pub from_runner: bool,
}

impl ApiError {
    pub fn new(status: u16, msg: impl Into<String>) -> Self {
        Self {
            status,
            msg: msg.into(),
            from_runner: false,
        }
    }
    pub fn runner(status: u16, msg: impl Into<String>) -> Self {
        Self {
            status,
            msg: msg.into(),
            from_runner: true,
        }
    }
    pub fn native(&self, stream: bool) -> Response {
        let ctype = if stream && self.from_runner {
            JSON
        } else {
            JSON_UTF8
        };
        respond(
            self.status,
            ctype,
            go_json(&serde_json::json!({ "error": self.msg })),
        )
    }
    /// The OpenAI-compatible layer's error object, written by `json.Encoder` (trailing newline).
    pub fn openai(&self) -> Response {
        let kind = match self.status {
            400 => "invalid_request_error",
            404 => "not_found_error",
            _ => "api_error",
        };
        let v = serde_json::json!({ "error": {
            "message": self.msg, "type": kind, "param": null, "code": null } });
        let mut body = go_json(&v);
        body.push(b'\n');
        respond(self.status, JSON, body)
    }
}

/// Parse a JSON request body, reporting failures with Go `encoding/json`-like texts.
pub fn parse_body(b: &[u8], go_type: &str) -> Result<serde_json::Value, ApiError> {
    if b.is_empty() {
        return Err(ApiError::new(400, "missing request body"));
    }
    parse_json(b, &format!("api.{go_type}"))
}

/// [`parse_body`] for a non-empty body decoded into the Go type `qualified` (`pkg.Type`).
pub fn parse_json(b: &[u8], qualified: &str) -> Result<serde_json::Value, ApiError> {
    let v: serde_json::Value = serde_json::from_slice(b).map_err(|e| {
        if e.is_eof() {
            return ApiError::new(400, "unexpected EOF");
        }
        let line = b
            .split(|&c| c == b'\n')
            .nth(e.line().saturating_sub(1))
            .unwrap_or(b);
        let ch = line
            .get(e.column().saturating_sub(1))
            .copied()
            .unwrap_or(b' ') as char;
        ApiError::new(
            400,
            format!("invalid character '{ch}' looking for beginning of value"),
        )
    })?;
    let kind = match &v {
        serde_json::Value::Object(_) | serde_json::Value::Null => return Ok(v),
        serde_json::Value::Array(_) => "array",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Bool(_) => "bool",
    };
    Err(ApiError::new(
        400,
        format!("json: cannot unmarshal {kind} into Go value of type {qualified}"),
    ))
}

pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// A response body stream that reports to the counters whether it ran to completion or was
/// dropped early (client disconnect / cancellation). An `Err` item is a deliberate cut.
pub struct Tracked {
    inner: ByteStream,
    counters: Arc<Counters>,
    finished: bool,
}

impl Tracked {
    pub fn new(inner: ByteStream, counters: Arc<Counters>) -> Self {
        counters.streams_started.fetch_add(1, Ordering::Relaxed);
        Self {
            inner,
            counters,
            finished: false,
        }
    }
    pub fn body(self) -> Body {
        Body::from_stream(self)
    }
}

impl Stream for Tracked {
    type Item = Result<Bytes, std::io::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let r = self.inner.as_mut().poll_next(cx);
        match &r {
            Poll::Ready(None) if !self.finished => {
                self.finished = true;
                self.counters
                    .streams_completed
                    .fetch_add(1, Ordering::Relaxed);
            }
            Poll::Ready(Some(Err(_))) if !self.finished => {
                self.finished = true;
                self.counters.streams_cut.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        r
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if !self.finished {
            self.counters
                .streams_aborted
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_time_trims_zeros() {
        let at = |ns| {
            let d = time::Date::from_calendar_date(2025, time::Month::October, 26).unwrap();
            d.with_time(time::Time::from_hms_nano(17, 15, 24, ns).unwrap())
                .assume_utc()
        };
        assert_eq!(go_time(at(97_767_000)), "2025-10-26T17:15:24.097767Z");
        assert_eq!(go_time(at(0)), "2025-10-26T17:15:24Z");
    }

    #[test]
    fn escapes_like_go() {
        let v = serde_json::json!({"c": "<think>a&b\u{2028}"});
        assert_eq!(
            String::from_utf8(go_json(&v)).unwrap(),
            r#"{"c":"\u003cthink\u003ea\u0026b\u2028"}"#
        );
        assert_eq!(go_quote("\"yaml\""), r#""\"yaml\"""#);
    }
}
