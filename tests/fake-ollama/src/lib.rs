//! An in-process fake of **Ollama 0.32.15 (llama-server engine)** for augur's tests and
//! benchmarks: same endpoints, status codes, content types, field order, timestamps and error
//! texts, deterministic model output, and fault-injection models selected by model name.
//!
//! ```no_run
//! # async fn t() {
//! let fake = fake_ollama::FakeOllama::builder().script("tool-json", vec!["{}".into()]).start().await;
//! let url = fake.url(); // http://127.0.0.1:PORT
//! // ... drive augur against it, then:
//! assert_eq!(fake.requests("/api/chat"), 1);
//! fake.shutdown().await;
//! # }
//! ```
//!
//! Models: `llama3.2` (completion, tools), `gemma3` (completion, vision), `qwen3` (completion,
//! tools, thinking) and the fault models of [`FAULT_MODELS`] (completion only):
//! `slow-first-byte`, `slow-stream`, `stream-cut`, `error-500`, `bad-json`, `truncated`,
//! `invalid-then-valid`, `long-stream`, `echo`, `tool-json`, `reject-schema`, `dribble`,
//! `mid-cut`, `loop-array`, `loop-string`, `loop-repeat`:
//!
//! - `slow-first-byte`: sleeps `SLOW_MS` (default 2000 ms) before the response head.
//! - `slow-stream`: 200 ms between chunks. `stream-cut`: 3 chunks, then the connection is
//!   dropped (no done chunk; a non-streaming body is cut in half).
//! - `error-500`: 500 `model runner has unexpectedly stopped, …`.
//! - `bad-json`: the format answer in ```` ```json ```` fences with a trailing comma.
//! - `truncated`: the format answer cut at two thirds, `done_reason` `length`.
//! - `invalid-then-valid`: alternates per model, starting with parseable but schema-invalid
//!   JSON (first required property missing), then a valid instance.
//! - `long-stream`: `options.num_predict` (default 100; `max_output_tokens` on `/v1/responses`,
//!   `max_tokens` on `/v1/messages`) chunks of `"tok "`, spaced by the fake-only
//!   `options.interval_ms` (default: the builder's chunk delay).
//! - `echo`: content = the request body as received (compact JSON).
//! - `tool-json`: content = the last user message, streamed in 3-character pieces.
//! - `dribble`, `mid-cut`: slow answers whose responses are logged, and bodies cut in the
//!   middle of a line (see the `faults` module).
//! - `loop-array`, `loop-string`: a small model running away under a `format`: it repeats the
//!   item of the first array of scalars (or `"la "` in the first string without `format`)
//!   until `options.num_predict` (default 1024 tokens, the fake's full context) cuts it, with
//!   `done_reason` `length`; a `maxItems` / `maxLength` on that part makes it stop there and
//!   close the JSON (see the `runaway` module).
//! - `loop-repeat`: as `loop-string`, repeating `0`, and ended as Ollama ends an answer whose
//!   token repeats more than 30 times in a row: no done chunk (`"done": false` in a whole
//!   body). A `maxLength` lets it finish.
//! - `text-call` (completion, tools): a tool model whose call Ollama's parser missed: given
//!   `tools`, the content is `I'll look that up.` and a Qwen-style
//!   `<tool_call>\n{"name": <first tool>, "arguments": <schema instance>}\n</tool_call>`
//!   block, in 3-character pieces, with no `tool_calls`.
//! - `reject-schema`: whenever `format` is an object, llama-server's converter error
//!   (400 `"json_schema": JSON schema conversion failed: …`), as for a schema the real converter
//!   cannot handle but [`schema::check`] would pass; `"json"` and no format answer normally.
//!
//! Several fakes can stand for several Ollama servers: [`Builder::models`] gives each its own
//! catalog, [`Builder::loaded`] its own `/api/ps`, [`Builder::pull_adds`] lets a pull add a
//! model, [`FakeOllama::set_busy`] makes generation answer Ollama's 503 "server busy", and
//! [`Builder::listing_fault`] makes the listings stall or trickle after their head.
//!
//! Ordinary models answer a fixed sentence in 11 tokens; with `format` they answer a
//! deterministic schema instance ([`schema::instance`]); a tool model given `tools` answers a
//! call of the first tool (classic-engine shape: a `done:false` chunk with `content:""` and
//! `tool_calls`, then the done chunk); `qwen3` thinks first unless `think:false`. Scripted
//! replies ([`Builder::script`]) take precedence over all content rules (`options.num_predict`
//! still cuts them, in 3-character tokens).
//!
//! Log-probabilities (details in the `logprobs` module; tokenizer: [`tokens`]): a request
//! with `"logprobs": true` on `/api/chat`, `/api/generate` or `/v1/chat/completions` gets
//! Ollama's `logprobs` list (`{"token","logprob","bytes","top_logprobs"}`) on every chunk for
//! the text that chunk carries (thinking, content, and for native tool calls one compact
//! `{"name":…,"arguments":…}` per call, `\n`-separated, on the `tool_calls` chunk; nothing on
//! the done chunk), all of them concatenated on a whole answer (`choices[0].logprobs.content`
//! on `/v1/chat/completions`). Every token has probability [`CONFIDENT`] (0.99) unless it
//! overlaps an unsure span ([`Builder::unsure`], [`FakeOllama::push_unsure`]);
//! `top_logprobs: N` lists the token first, then `N-1` made-up alternatives `alt1`, … with
//! probability `min(p, 1 - p) / 2^k` (at least `1e-6 / 2^k`): sorted, never summing past 1.
//! `top_logprobs` outside 0–20 is Ollama's 400 `top_logprobs must be between 0 and 20`.
//! Without `logprobs: true` nothing changes. `eval_count` still counts pieces, not tokens.
//!
//! Endpoints: `/`, `/api/version`, `/api/tags`, `/api/ps`, `/api/show`, `/api/chat`,
//! `/api/generate`, `/api/embed`, `/api/embeddings`, `/api/pull`, `/api/push`, `/api/create`,
//! `/api/copy`, `/api/delete`, `HEAD`/`POST /api/blobs/:digest`; the OpenAI-compatible
//! `/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/models[/:model]`; and the
//! two surfaces Ollama serves in front of its chat handler, which run the same chat planning
//! (content, thinking, tool calls, `format` instances, scripts, every fault model) and render
//! it in their own shapes, whole or as SSE `event:`/`data:` frames, with errors in their own
//! error shapes (a model without tools given tools: Ollama's 400 `… does not support tools`;
//! an unknown model: 404; the middleware's own checks: 400 with Ollama's texts):
//!
//! - `POST /v1/responses` (OpenAI Responses): `input` (a string or an item history),
//!   `instructions`, function `tools`, `reasoning.effort` (→ `think`), `max_output_tokens`
//!   (→ `num_predict`), a `json_schema` `text.format` (→ `format`). A response object with a
//!   reasoning item, then the function calls or a message; or its events, each with a
//!   `sequence_number`. The status is always `completed`, even when `max_output_tokens` cut it.
//! - `POST /v1/messages` (Anthropic Messages): requires `model`, a positive `max_tokens`
//!   (→ `num_predict`) and `messages`; `thinking` and `output_config.effort` (→ `think`) are
//!   dropped rather than refused for a model that cannot think. A message of `thinking`, `text`
//!   and `tool_use` blocks with `stop_reason` `end_turn`, `max_tokens` or `tool_use`; or its
//!   events (one `input_json_delta` per tool call, no `ping`).

mod anthropic;
mod catalog;
mod faults;
mod logprobs;
mod manage;
mod native;
mod openai;
mod plan;
mod responses;
mod routes;
mod runaway;
pub mod schema;
mod surface;
pub mod wire;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, Method};
use bytes::Bytes;

pub use catalog::{FAULT_MODELS, TOOL_FAULT_MODELS};
pub use faults::{BodyLog, ListingFault};
pub use logprobs::{CONFIDENT, tokens};
pub use native::BUSY;
pub use plan::{RUNNER_STOPPED, SENTENCE};

/// The Ollama release this fake imitates.
pub const OLLAMA_VERSION: &str = "0.32.15";

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: Method,
    /// Path and query.
    pub uri: String,
    pub headers: HeaderMap,
    /// The body bytes (empty for blob uploads, which are never held in memory).
    pub body: Bytes,
}

/// Request and stream counters, shared with the server tasks.
#[derive(Default)]
pub struct Counters {
    total: AtomicU64,
    connections: AtomicU64,
    per_path: Mutex<HashMap<String, u64>>,
    last: Mutex<Option<RecordedRequest>>,
    last_by_path: Mutex<HashMap<String, RecordedRequest>>,
    pub(crate) streams_started: AtomicU64,
    pub(crate) streams_completed: AtomicU64,
    pub(crate) streams_aborted: AtomicU64,
    pub(crate) streams_cut: AtomicU64,
    pub(crate) blob_bytes: AtomicU64,
    pub(crate) bodies: Mutex<Vec<BodyLog>>,
}

pub(crate) struct Shared {
    pub models: Mutex<Vec<catalog::Model>>,
    /// Models `/api/ps` lists (normalized); `None` = the first model.
    pub loaded: Option<Vec<String>>,
    /// Generation answers Ollama's 503 "server busy" while set.
    pub busy: std::sync::atomic::AtomicBool,
    /// A pull adds the model to the catalog.
    pub pull_adds: bool,
    /// How the listings misbehave, if they do.
    pub listing_fault: Option<ListingFault>,
    /// Generation routes take the request and never answer (a wedged runner behind a live
    /// server); probes and listings answer.
    pub hung: std::sync::atomic::AtomicBool,
    pub version_body: Bytes,
    pub slow_ms: u64,
    pub chunk_delay: Duration,
    pub record: bool,
    pub counters: Arc<Counters>,
    scripts: Mutex<HashMap<String, VecDeque<String>>>,
    /// Unsure spans for logprobs, per model and per request.
    pub unsure: logprobs::Unsure,
    model_counts: Mutex<HashMap<String, u64>>,
    pub blobs: Mutex<HashSet<String>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub fn pop_script(&self, model: &str) -> Option<String> {
        lock(&self.scripts).get_mut(model)?.pop_front()
    }
    /// Returns how many requests this model had before this one.
    pub fn bump_model_count(&self, model: &str) -> u64 {
        let mut m = lock(&self.model_counts);
        let c = m.entry(model.to_owned()).or_default();
        *c += 1;
        *c - 1
    }
}

/// The prefix of a scripted reply that answers native `tool_calls`.
pub const TOOL_CALLS_SCRIPT: &str = "@tool_calls ";

/// A scripted reply answering `calls` (`[{"name": …, "arguments": …}]`) as native `tool_calls`;
/// an empty list answers nothing (empty content, no calls).
pub fn tool_calls_reply(calls: &serde_json::Value) -> String {
    format!("{TOOL_CALLS_SCRIPT}{calls}")
}

/// Configures a [`FakeOllama`].
pub struct Builder {
    listen: SocketAddr,
    models: Option<Vec<String>>,
    loaded: Option<Vec<String>>,
    pull_adds: bool,
    listing_fault: Option<ListingFault>,
    hung: bool,
    scripts: Vec<(String, Vec<String>)>,
    slow_ms: u64,
    chunk_delay: Duration,
    record: bool,
    version: String,
    /// Scripted models with the `tools` capability.
    tool_models: Vec<String>,
    /// Unsure spans per model ([`Builder::unsure`]).
    unsure: Vec<(String, logprobs::Spans)>,
    /// Copies made as `ollama cp` makes them: (source, destination).
    copies: Vec<(String, String)>,
}

impl Builder {
    /// Successive replies (message content) for `model`; each generation request pops one.
    /// Unknown model names are added to the catalog with capability `completion`.
    pub fn script(mut self, model: &str, replies: Vec<String>) -> Self {
        self.scripts.push((catalog::normalize(model), replies));
        self
    }
    /// [`Builder::script`] for a model with the `tools` capability: it accepts `tools` and
    /// answers the scripted content (never `tool_calls`).
    pub fn script_tools(mut self, model: &str, replies: Vec<String>) -> Self {
        self.tool_models.push(catalog::normalize(model));
        self.script(model, replies)
    }
    /// [`Builder::script_tools`] whose replies are native `tool_calls`: each reply is a list
    /// of `{"name": …, "arguments": …}` (an empty list: an empty answer, `eval_count` 1).
    /// Plain string replies may be mixed in with [`tool_calls_reply`].
    pub fn script_tool_calls(self, model: &str, replies: Vec<serde_json::Value>) -> Self {
        let replies = replies.iter().map(tool_calls_reply).collect();
        self.script_tools(model, replies)
    }
    /// Tokens of `model`'s answers overlapping an occurrence of one of these texts get its
    /// probability (in (0, 1]) instead of [`CONFIDENT`] when a request asks for `logprobs`;
    /// several calls add spans. Panics on a probability outside (0, 1].
    pub fn unsure(mut self, model: &str, spans: &[(&str, f64)]) -> Self {
        let spans = logprobs::spans(spans);
        self.unsure.push((catalog::normalize(model), spans));
        self
    }
    /// Delay before the response head for the `slow-first-byte` model (default: env
    /// `SLOW_MS`, else 2000 ms).
    pub fn slow_ms(mut self, ms: u64) -> Self {
        self.slow_ms = ms;
        self
    }
    /// Pause between stream chunks for ordinary models (default none).
    pub fn chunk_delay(mut self, d: Duration) -> Self {
        self.chunk_delay = d;
        self
    }
    /// Keep the last request's headers and body (default true; benches turn it off).
    pub fn record(mut self, on: bool) -> Self {
        self.record = on;
        self
    }
    /// The version reported by `/api/version` (default [`OLLAMA_VERSION`]).
    pub fn version(mut self, v: &str) -> Self {
        self.version = v.to_owned();
        self
    }
    /// Only these models (and scripted ones) in the catalog, instead of every default and
    /// fault model; a name the default catalog lacks gets capability `completion`. For
    /// several fakes with different models behind one augur.
    pub fn models(mut self, names: &[&str]) -> Self {
        self.models = Some(names.iter().map(|n| catalog::normalize(n)).collect());
        self
    }
    /// A copy of model `source` named `destination`, as `ollama cp` makes it: the same
    /// manifest (digest), listed by `/api/tags` under both names. `/api/ps` lists a loaded
    /// model once, under the name it was loaded by, as Ollama does (one runner per model).
    pub fn copy(mut self, source: &str, destination: &str) -> Self {
        self.copies
            .push((catalog::normalize(source), catalog::normalize(destination)));
        self
    }
    /// The models `/api/ps` lists as loaded (default: the catalog's first).
    pub fn loaded(mut self, names: &[&str]) -> Self {
        self.loaded = Some(names.iter().map(|n| catalog::normalize(n)).collect());
        self
    }
    /// A successful `/api/pull` adds the model to the catalog (default off: tests stay
    /// independent).
    pub fn pull_adds(mut self, on: bool) -> Self {
        self.pull_adds = on;
        self
    }
    /// `/api/tags`, `/api/ps` and `/v1/models` send their head, then stall or trickle their
    /// body forever (see [`ListingFault`]); everything else answers normally.
    pub fn listing_fault(mut self, fault: ListingFault) -> Self {
        self.listing_fault = Some(fault);
        self
    }
    /// Generation routes (`/api/chat`, `/api/generate`, `/api/embed`, the `/v1` ones) take the
    /// request and never send a response head, while `/api/version`, `/api/tags` and
    /// `/api/ps` answer: a wedged runner behind a live server. [`FakeOllama::set_hung`]
    /// changes it while running.
    pub fn hung(mut self, on: bool) -> Self {
        self.hung = on;
        self
    }
    /// Listen address (default `127.0.0.1:0`).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Binds and serves in the background. Panics if the address cannot be bound.
    pub async fn start(self) -> FakeOllama {
        self.try_start()
            .await
            .unwrap_or_else(|e| panic!("fake-ollama: cannot listen: {e}"))
    }

    pub async fn try_start(self) -> std::io::Result<FakeOllama> {
        let mut models = catalog::default_models();
        if let Some(names) = &self.models {
            models.retain(|m| names.contains(&m.name));
            for name in names {
                if !models.iter().any(|m| &m.name == name) {
                    models.push(catalog::Model::plain(name));
                }
            }
        }
        for (source, destination) in &self.copies {
            if let Some(copy) = models
                .iter()
                .find(|m| &m.name == source)
                .map(|m| m.copied_as(destination))
            {
                models.push(copy);
            }
        }
        let mut scripts = HashMap::new();
        for (name, replies) in self.scripts {
            if !models.iter().any(|m| m.name == name) {
                let mut model = catalog::Model::plain(&name);
                if self.tool_models.contains(&name) {
                    model.capabilities.push(catalog::CAP_TOOLS);
                }
                models.push(model);
            }
            scripts
                .entry(name)
                .or_insert_with(VecDeque::new)
                .extend(replies);
        }
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            models: Mutex::new(models),
            loaded: self.loaded,
            busy: std::sync::atomic::AtomicBool::new(false),
            pull_adds: self.pull_adds,
            listing_fault: self.listing_fault,
            hung: std::sync::atomic::AtomicBool::new(self.hung),
            version_body: Bytes::from(format!(r#"{{"version":"{}"}}"#, self.version)),
            slow_ms: self.slow_ms,
            chunk_delay: self.chunk_delay,
            record: self.record,
            counters: counters.clone(),
            scripts: Mutex::new(scripts),
            unsure: logprobs::Unsure::new(self.unsure),
            model_counts: Mutex::default(),
            blobs: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind(self.listen).await?;
        let addr = listener.local_addr()?;
        let app = routes::router(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let accepted = counters.clone();
        // Small chunks go out at once, as from Ollama (Go sets TCP_NODELAY).
        let listener = axum::serve::ListenerExt::tap_io(listener, move |tcp| {
            let _ = tcp.set_nodelay(true);
            accepted.connections.fetch_add(1, Ordering::Relaxed);
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(FakeOllama {
            addr,
            shared,
            stop: Some(tx),
            task: Some(task),
        })
    }
}

/// A running fake Ollama. Dropping it stops the server.
pub struct FakeOllama {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FakeOllama {
    pub fn builder() -> Builder {
        let slow_ms = std::env::var("SLOW_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        Builder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            models: None,
            loaded: None,
            pull_adds: false,
            listing_fault: None,
            hung: false,
            scripts: Vec::new(),
            slow_ms,
            chunk_delay: Duration::ZERO,
            record: true,
            version: OLLAMA_VERSION.to_owned(),
            tool_models: Vec::new(),
            unsure: Vec::new(),
            copies: Vec::new(),
        }
    }
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// Wedge (or free) the generation routes; see [`Builder::hung`].
    pub fn set_hung(&self, on: bool) {
        self.shared.hung.store(on, Ordering::Relaxed);
    }
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// Requests received for `path` (path only, no query).
    pub fn requests(&self, path: &str) -> u64 {
        lock(&self.shared.counters.per_path)
            .get(path)
            .copied()
            .unwrap_or(0)
    }
    pub fn total_requests(&self) -> u64 {
        self.shared.counters.total.load(Ordering::Relaxed)
    }
    /// The most recent request (any path).
    pub fn last_request(&self) -> Option<RecordedRequest> {
        lock(&self.shared.counters.last).clone()
    }
    /// The most recent request for `path`.
    pub fn last_request_to(&self, path: &str) -> Option<RecordedRequest> {
        lock(&self.shared.counters.last_by_path).get(path).cloned()
    }
    /// The last request body to `path` parsed as JSON.
    pub fn last_json(&self, path: &str) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.last_request_to(path)?.body).ok()
    }
    /// Streaming bodies started (NDJSON/SSE streams and cut bodies).
    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.counters.connections.load(Ordering::Relaxed)
    }
    pub fn streams_started(&self) -> u64 {
        self.shared.counters.streams_started.load(Ordering::Relaxed)
    }
    /// Streams that ran to their end.
    pub fn streams_completed(&self) -> u64 {
        self.shared
            .counters
            .streams_completed
            .load(Ordering::Relaxed)
    }
    /// Streams dropped before their end because the client went away (cancellation).
    pub fn streams_aborted(&self) -> u64 {
        self.shared.counters.streams_aborted.load(Ordering::Relaxed)
    }
    /// Streams the fake cut on purpose (`stream-cut`).
    pub fn streams_cut(&self) -> u64 {
        self.shared.counters.streams_cut.load(Ordering::Relaxed)
    }
    /// Waits until at least `n` streams were aborted by the client, up to `timeout`.
    pub async fn wait_streams_aborted(&self, n: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.streams_aborted() < n {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }
    /// Every `dribble` response so far, oldest first.
    pub fn bodies(&self) -> Vec<BodyLog> {
        lock(&self.shared.counters.bodies).clone()
    }
    /// Bytes received by `POST /api/blobs/:digest` in total.
    pub fn blob_bytes(&self) -> u64 {
        self.shared.counters.blob_bytes.load(Ordering::Relaxed)
    }
    /// Rebuilds `model` under its name (as a new `ollama pull` or `ollama create` would): its
    /// digest in `/api/tags` and `/api/ps` changes; its answers do not.
    pub fn rebuild(&self, model: &str) {
        let name = catalog::normalize(model);
        for m in lock(&self.shared.models)
            .iter_mut()
            .filter(|m| m.name == name)
        {
            m.revision += 1;
        }
    }
    /// Appends scripted replies for `model` (it must be a catalog model or scripted at build time).
    pub fn push_script(&self, model: &str, replies: Vec<String>) {
        lock(&self.shared.scripts)
            .entry(catalog::normalize(model))
            .or_default()
            .extend(replies);
    }
    /// Queues the unsure spans of one generation request of `model`, in place of the
    /// builder's ([`Builder::unsure`]): each generation request of `model` (with or without
    /// `logprobs`) takes the oldest queued list, as it takes a scripted reply; an empty list
    /// makes that answer wholly confident. Panics on a probability outside (0, 1].
    pub fn push_unsure(&self, model: &str, spans: &[(&str, f64)]) {
        let spans = logprobs::spans(spans);
        self.shared.unsure.push(catalog::normalize(model), spans);
    }
    /// While `on`, `/api/chat` and `/api/generate` answer Ollama's 503 `server busy, please
    /// try again.  maximum pending requests exceeded` (its queue is full).
    pub fn set_busy(&self, on: bool) {
        self.shared.busy.store(on, Ordering::Relaxed);
    }
    /// Stops accepting, lets in-flight requests finish for up to 2 s, then drops everything.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for FakeOllama {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
