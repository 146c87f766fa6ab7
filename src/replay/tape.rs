//! Record files read back: every upstream call's answer keyed by its path
//! and canonical body (object keys sorted, whitespace ignored), the models
//! seen, and the client's requests with the answers they got (for
//! `--check`). Bounded: a file past [`MAX_FILE_BYTES`] is refused, and a
//! line that is not a recorded exchange is skipped.

use std::{
    collections::{BTreeSet, HashMap},
    path::PathBuf,
    sync::atomic::{AtomicUsize, Ordering},
};

use serde_json::{Map, Value};

/// Largest record file read (a `record.max_bytes` file fits many times).
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 30;

/// One recorded answer: status, content type and its lines, each with its
/// offset in ms from the request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub lines: Vec<(u64, String)>,
}

impl Answer {
    /// The body: its lines joined.
    pub(crate) fn body(&self) -> String {
        self.lines.iter().map(|(_, l)| l.as_str()).collect()
    }
}

/// One recorded client request and what it got.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub request_id: String,
    pub method: String,
    pub route: String,
    pub body: String,
    pub answer: Answer,
    pub headers: Map<String, Value>,
    pub done: Map<String, Value>,
}

/// Recorded answers to one upstream request, served in turn.
#[derive(Debug, Default)]
struct Answers {
    answers: Vec<Answer>,
    next: AtomicUsize,
}

/// Everything the record files hold.
#[derive(Debug, Default)]
pub(crate) struct Tape {
    upstream: HashMap<(String, String), Answers>,
    pub models: BTreeSet<String>,
    /// Models the upstream was sent tools for: it ran them itself, so its
    /// `/api/show` listed `tools`.
    pub tools: BTreeSet<String>,
    pub clients: Vec<Client>,
}

impl Tape {
    /// Read `files` (an error names the file that cannot be read).
    pub(crate) fn load(files: &[PathBuf]) -> Result<Self, String> {
        let mut tape = Self::default();
        for file in files {
            let size = std::fs::metadata(file)
                .map_err(|e| format!("{}: {e}", file.display()))?
                .len();
            if size > MAX_FILE_BYTES {
                return Err(format!(
                    "{}: larger than {MAX_FILE_BYTES} bytes",
                    file.display()
                ));
            }
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            for line in text.lines() {
                if let Ok(Value::Object(x)) = serde_json::from_str::<Value>(line) {
                    tape.add(&x);
                }
            }
        }
        Ok(tape)
    }

    fn add(&mut self, x: &Map<String, Value>) {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let Some(calls) = x.get("upstream").and_then(Value::as_array) else {
            return;
        };
        for call in calls {
            let (Some(path), Some(status)) = (text(call, "path"), call.get("status")) else {
                continue;
            };
            let body = text(call, "body").unwrap_or_default();
            let sent = serde_json::from_str::<Value>(&body).unwrap_or_default();
            if let Some(m) = sent.get("model").and_then(Value::as_str) {
                self.models.insert(m.to_string());
                if sent.get("tools").is_some() {
                    self.tools.insert(m.to_string());
                }
            }
            let answer = Answer {
                status: status
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok())
                    .unwrap_or(200),
                content_type: text(call, "content_type"),
                lines: lines(call.get("lines")),
            };
            self.upstream
                .entry((path, canonical(&body)))
                .or_default()
                .answers
                .push(answer);
        }
        let object = |v: Option<&Value>, k: &str| match v.and_then(|v| v.get(k)) {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let Some(answer) = x.get("answer").filter(|a| a.is_object()) else {
            return;
        };
        let xv = Value::Object(x.clone());
        self.clients.push(Client {
            request_id: text(&xv, "request_id").unwrap_or_default(),
            method: text(&xv, "method").unwrap_or_else(|| "POST".into()),
            route: text(&xv, "route").unwrap_or_default(),
            body: x
                .get("request")
                .and_then(|r| text(r, "body"))
                .unwrap_or_default(),
            answer: Answer {
                status: answer
                    .get("status")
                    .and_then(Value::as_u64)
                    .and_then(|s| u16::try_from(s).ok())
                    .unwrap_or(0),
                content_type: None,
                lines: lines(answer.get("lines")),
            },
            headers: object(x.get("decisions"), "headers"),
            done: object(x.get("decisions"), "done"),
        });
    }

    /// The next recorded answer to `path` with `body`: each in turn, the
    /// last one again once all were given.
    pub(crate) fn answer(&self, path: &str, body: &str) -> Option<&Answer> {
        let a = self.upstream.get(&(path.to_string(), canonical(body)))?;
        let i = a.next.fetch_add(1, Ordering::Relaxed);
        a.answers.get(i.min(a.answers.len().saturating_sub(1)))
    }
}

fn lines(v: Option<&Value>) -> Vec<(u64, String)> {
    v.and_then(Value::as_array)
        .map(|ls| {
            ls.iter()
                .filter_map(|l| {
                    let data = l.get("data")?.as_str()?.to_string();
                    Some((l.get("ms").and_then(Value::as_u64).unwrap_or(0), data))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The canonical text of a JSON body: object keys sorted, no whitespace;
/// a body that is not JSON is its own text.
pub(crate) fn canonical(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => sorted(v).to_string(),
        Err(_) => body.trim().to_string(),
    }
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
#[path = "tape_tests.rs"]
mod tests;
