//! One exchange as it is gathered: the client's request, the upstream
//! calls made for it, the answer sent; and the JSON line it becomes.
//! Every byte kept counts against [`MAX_LINE_BYTES`]; past it, bodies
//! are cut and their section marked `"truncated": true`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Most bytes of bodies and lines one exchange keeps.
pub(crate) const MAX_LINE_BYTES: usize = 4 << 20;

/// What is known of a request when recording starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    pub request_id: String,
    pub method: String,
    pub route: String,
    pub principal: String,
    pub model: String,
}

/// Lines of a body, each with its offset in ms from the request.
#[derive(Debug, Default)]
pub(super) struct Lines {
    entries: Vec<(u64, String)>,
    pending: Vec<u8>,
    pending_ms: u64,
    pub truncated: bool,
}

impl Lines {
    /// Add `data`, arrived `ms` after the request, within `budget` bytes.
    pub(super) fn push(&mut self, ms: u64, data: &[u8], budget: &mut usize) {
        if self.truncated {
            return;
        }
        let take = data.len().min(*budget);
        *budget -= take;
        if take < data.len() {
            self.truncated = true;
        }
        let mut rest = &data[..take];
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.pending.extend_from_slice(&rest[..=i]);
            rest = &rest[i + 1..];
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.entries.push((ms, line));
        }
        if !rest.is_empty() {
            self.pending.extend_from_slice(rest);
            self.pending_ms = ms;
        }
    }

    /// The lines, the last unfinished one included.
    pub(super) fn take_json(&mut self) -> Value {
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.entries.push((self.pending_ms, line));
        }
        self.entries
            .iter()
            .map(|(ms, data)| json!({"ms": ms, "data": data}))
            .collect()
    }

    /// The lines' text so far.
    pub(super) fn texts(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(_, d)| d.as_str())
    }
}

/// One upstream call.
#[derive(Debug, Default)]
pub(super) struct Call {
    pub path: String,
    pub body: Option<String>,
    pub body_truncated: bool,
    pub status: Option<u16>,
    pub content_type: Option<String>,
    pub error: Option<String>,
    pub lines: Lines,
}

/// The answer sent to the client.
#[derive(Debug, Default)]
pub(super) struct Answer {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub lines: Lines,
}

/// Everything gathered for one exchange.
#[derive(Debug)]
pub(super) struct Exchange {
    pub time: String,
    pub meta: Meta,
    pub request: String,
    pub request_truncated: bool,
    pub calls: Vec<Call>,
    pub answer: Option<Answer>,
    /// Bytes still allowed.
    pub budget: usize,
}

/// `text` cut to at most `budget` bytes (on a character boundary).
pub(super) fn cut(text: &[u8], budget: &mut usize) -> (String, bool) {
    let text = String::from_utf8_lossy(text);
    let mut end = text.len().min(*budget);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    *budget -= end;
    (text[..end].to_string(), end < text.len())
}

impl Exchange {
    /// The exchange as one JSON object; `complete` is false when the
    /// client left before the answer ended.
    pub(super) fn into_json(mut self, complete: bool) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter_mut()
            .map(|c| {
                let mut v = json!({
                    "path": c.path,
                    "body": c.body,
                    "status": c.status,
                    "content_type": c.content_type,
                    "lines": c.lines.take_json(),
                });
                if let Some(e) = &c.error {
                    v["error"] = json!(e);
                }
                if c.body_truncated || c.lines.truncated {
                    v["truncated"] = json!(true);
                }
                v
            })
            .collect();
        let (answer, decisions) = match self.answer.as_mut() {
            Some(a) => {
                let decisions = json!({
                    "headers": a.headers.iter()
                        .filter(|(k, _)| k.starts_with("x-augur-"))
                        .collect::<BTreeMap<_, _>>(),
                    "done": done_fields(a.lines.texts()),
                });
                let mut v = json!({
                    "status": a.status,
                    "headers": a.headers,
                    "lines": a.lines.take_json(),
                    "complete": complete,
                });
                if a.lines.truncated {
                    v["truncated"] = json!(true);
                }
                (v, decisions)
            }
            None => (Value::Null, Value::Null),
        };
        let mut request = json!({"body": self.request});
        if self.request_truncated {
            request["truncated"] = json!(true);
        }
        json!({
            "time": self.time,
            "request_id": self.meta.request_id,
            "method": self.meta.method,
            "route": self.meta.route,
            "principal": self.meta.principal,
            "model": self.meta.model,
            "request": request,
            "upstream": calls,
            "decisions": decisions,
            "answer": answer,
        })
    }
}

/// The `augur_*` fields of the answer's JSON lines (an SSE line's data
/// too), the last value of each.
pub(crate) fn done_fields<'a>(lines: impl Iterator<Item = &'a str>) -> Map<String, Value> {
    let mut out = Map::new();
    for line in lines {
        let line = line.trim();
        let line = line.strip_prefix("data:").map_or(line, str::trim_start);
        if !line.starts_with('{') {
            continue;
        }
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) {
            for (k, v) in map {
                if k.starts_with("augur_") {
                    out.insert(k, v);
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "exchange_tests.rs"]
mod tests;
