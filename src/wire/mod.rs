//! Wire helpers shared by every route: JSON written the way Ollama's Go
//! server writes it, Go-style timestamps, request paths as Go's router
//! reads them, model names as Ollama resolves them, the size of a JSON
//! value, header values that cannot be refused, log text no value can
//! break, URLs with their credentials taken out, and the affinity key of
//! a conversation.

pub(crate) mod affinity;
pub(crate) mod content;
pub(crate) mod go;
pub(crate) mod json_scan;
pub(crate) mod log_text;
pub(crate) mod model_name;
pub(crate) mod path;
pub(crate) mod redact;
pub(crate) mod responses_end;
pub(crate) mod upstream_error;

pub(crate) use go::{created_at_now, json_kind, ndjson_line, to_go_json};
pub use model_name::normalize_model_name;

/// `text` as a header value, never refused: control characters, bytes
/// outside ASCII and `%` itself are percent-encoded (`%0D`, `%C3%9C`,
/// `%25`), so a value the client cannot read as it is still arrives, and
/// no value can end the header or start another.
pub(crate) fn header_text(text: &str) -> http::HeaderValue {
    let plain = |b: u8| (b' '..=b'~').contains(&b) && b != b'%';
    if text.bytes().all(plain)
        && let Ok(value) = http::HeaderValue::from_str(text)
    {
        return value;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for b in text.bytes() {
        if plain(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    http::HeaderValue::from_str(&out).unwrap_or(http::HeaderValue::from_static(""))
}

/// Length of `v` as compact JSON, counted without building the text.
pub(crate) fn json_len(v: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
mod tests;
