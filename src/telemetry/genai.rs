//! Metrics of the generative calls, after the OpenTelemetry GenAI semantic
//! conventions (their Prometheus names):
//!
//! | metric | what | labels |
//! |---|---|---|
//! | `gen_ai_client_token_usage` | tokens per request, input and output | operation, model, token type, principal, upstream |
//! | `gen_ai_client_operation_duration_seconds` | from arrival to the last byte | operation, model, principal, outcome |
//! | `gen_ai_server_time_to_first_token_seconds` | from arrival to the first streamed chunk | model, upstream |
//! | `gen_ai_server_time_per_output_token_seconds` | generation time per output token | model, upstream |
//!
//! Token counts are the upstream's own (Ollama's `prompt_eval_count` /
//! `eval_count`, OpenAI's and Anthropic's `usage`), summed over every call
//! augur made for the request; an answer that carries none records no
//! tokens. Time per output token is Ollama's `eval_duration / eval_count`
//! when reported, else the stream's time after its first chunk per token.
//!
//! Labels stay bounded: principals are configured key ids (or
//! `anonymous`), upstreams are configured names, and at most
//! [`MAX_MODELS`] model names are labels — later ones are `other`.

use std::{
    cell::OnceCell,
    collections::HashSet,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use metrics::Histogram;

use super::timing::Timing;

/// Distinct model names kept as label values.
pub(crate) const MAX_MODELS: usize = 64;

/// The model label of `name` (normalized): itself while fewer than
/// [`MAX_MODELS`] names have been seen, else `other`.
pub(crate) fn model_label(name: &str) -> Arc<str> {
    static SEEN: OnceLock<Mutex<HashSet<Arc<str>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(HashSet::new()));
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = seen.get(name) {
        return known.clone();
    }
    if seen.len() >= MAX_MODELS {
        return Arc::from("other");
    }
    let label: Arc<str> = Arc::from(name);
    seen.insert(label.clone());
    label
}

pub(crate) use super::operation::operation;

/// Token counts of one request, as the upstream reported them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub input: u64,
    pub output: u64,
    /// Ollama's `eval_duration` (ns) for the output tokens, when reported.
    pub eval_ns: Option<u64>,
}

/// The GenAI metrics of one model request, recorded once when its
/// response ends (or its client leaves).
#[derive(Debug)]
pub(crate) struct Meter {
    started: Instant,
    operation: &'static str,
    model: Arc<str>,
    principal: String,
    timing: Option<Arc<Timing>>,
    first_chunk: Option<Instant>,
}

/// How a metered response ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ending {
    /// A success status, and the body was sent whole.
    pub ok: bool,
    /// An NDJSON or SSE stream.
    pub streamed: bool,
}

impl Meter {
    /// A meter for `operation` on `model` (normalized) by `principal`,
    /// started at `started`.
    pub(crate) fn new(
        started: Instant,
        operation: &'static str,
        model: &str,
        principal: &str,
        timing: Option<Arc<Timing>>,
    ) -> Self {
        Self {
            started,
            operation,
            model: model_label(model),
            principal: principal.to_string(),
            timing,
            first_chunk: None,
        }
    }

    /// A body frame with data was handed on.
    pub(crate) fn chunk(&mut self) {
        if self.first_chunk.is_none() {
            self.first_chunk = Some(Instant::now());
        }
    }

    fn upstream(&self) -> Arc<str> {
        self.timing
            .as_ref()
            .and_then(|t| t.upstream_label())
            .unwrap_or_else(|| Arc::from("none"))
    }

    /// Record the request: `counts` when the upstream reported any.
    pub(crate) fn finish(self, counts: Option<Counts>, end: Ending) {
        let total = self.started.elapsed();
        let key = Key {
            operation: self.operation,
            model: self.model.clone(),
            principal: self.principal.clone(),
            upstream: self.upstream(),
        };
        with_handles(key, |h| {
            h.duration(end.ok).record(total.as_secs_f64());
            if end.streamed
                && end.ok
                && let Some(first) = self.first_chunk
            {
                h.first_token()
                    .record(first.duration_since(self.started).as_secs_f64());
            }
            let Some(counts) = counts else { return };
            h.tokens(true).record(counts.input as f64);
            h.tokens(false).record(counts.output as f64);
            if let Some(per_token) = per_output_token(counts, self.first_chunk, end) {
                h.per_token().record(per_token.as_secs_f64());
            }
        });
    }
}

/// The labels of one request's GenAI metrics.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    operation: &'static str,
    model: Arc<str>,
    principal: String,
    upstream: Arc<str>,
}

/// The metric handles of one [`Key`], registered once per worker thread
/// (each at its first use: a series nothing was recorded in is not shown)
/// instead of being looked up by name and labels per request.
struct Handles {
    key: Key,
    ok: OnceCell<Histogram>,
    error: OnceCell<Histogram>,
    first_token: OnceCell<Histogram>,
    input: OnceCell<Histogram>,
    output: OnceCell<Histogram>,
    per_token: OnceCell<Histogram>,
}

impl Handles {
    fn new(key: &Key) -> Self {
        Self {
            key: key.clone(),
            ok: OnceCell::new(),
            error: OnceCell::new(),
            first_token: OnceCell::new(),
            input: OnceCell::new(),
            output: OnceCell::new(),
            per_token: OnceCell::new(),
        }
    }

    fn duration(&self, ok: bool) -> &Histogram {
        let (cell, outcome) = if ok {
            (&self.ok, "ok")
        } else {
            (&self.error, "error")
        };
        let k = &self.key;
        cell.get_or_init(|| {
            metrics::histogram!("gen_ai_client_operation_duration_seconds",
                "gen_ai_operation_name" => k.operation, "gen_ai_request_model" => k.model.to_string(),
                "principal" => k.principal.clone(), "outcome" => outcome)
        })
    }

    fn tokens(&self, input: bool) -> &Histogram {
        let (cell, kind) = if input {
            (&self.input, "input")
        } else {
            (&self.output, "output")
        };
        let k = &self.key;
        cell.get_or_init(|| {
            metrics::histogram!("gen_ai_client_token_usage",
                "gen_ai_operation_name" => k.operation, "gen_ai_request_model" => k.model.to_string(),
                "gen_ai_token_type" => kind, "principal" => k.principal.clone(),
                "upstream" => k.upstream.to_string())
        })
    }

    fn first_token(&self) -> &Histogram {
        let k = &self.key;
        self.first_token.get_or_init(|| {
            metrics::histogram!("gen_ai_server_time_to_first_token_seconds",
                "gen_ai_request_model" => k.model.to_string(), "upstream" => k.upstream.to_string())
        })
    }

    fn per_token(&self) -> &Histogram {
        let k = &self.key;
        self.per_token.get_or_init(|| {
            metrics::histogram!("gen_ai_server_time_per_output_token_seconds",
                "gen_ai_request_model" => k.model.to_string(), "upstream" => k.upstream.to_string())
        })
    }
}

/// Most label sets whose handles a thread keeps (then it starts afresh).
const MAX_HANDLES: usize = 4096;

thread_local! {
    static HANDLES: std::cell::RefCell<std::collections::HashMap<Key, Handles>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Run `f` with the handles of `key`, registered on first use.
fn with_handles(key: Key, f: impl FnOnce(&Handles)) {
    HANDLES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= MAX_HANDLES && !cache.contains_key(&key) {
            cache.clear();
        }
        let handles = cache.entry(key).or_insert_with_key(Handles::new);
        f(handles);
    })
}

/// Generation time per output token: the upstream's own measure, else a
/// whole stream's time after its first chunk.
fn per_output_token(counts: Counts, first: Option<Instant>, end: Ending) -> Option<Duration> {
    if counts.output == 0 || !end.ok {
        return None;
    }
    if let Some(ns) = counts.eval_ns {
        return Some(Duration::from_nanos(ns / counts.output));
    }
    let first = first.filter(|_| end.streamed && counts.output > 1)?;
    let u32_tokens = u32::try_from(counts.output - 1).ok()?;
    Some(first.elapsed() / u32_tokens)
}

#[cfg(test)]
#[path = "genai_tests.rs"]
mod tests;
