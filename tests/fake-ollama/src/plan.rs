//! Turns a generation request (native chat/generate or OpenAI-compatible) into a plan: the
//! validation Ollama does (in its order and with its texts), then the pieces the fake model
//! "generates", tool calls, done reason and timing, including every fault-injection model.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::Shared;
use crate::catalog::{CAP_THINKING, CAP_TOOLS, Model};
use crate::logprobs;
use crate::runaway;
use crate::schema;
use crate::wire::{ApiError, go_quote};

/// The deterministic answer of every ordinary model, one string per token.
pub const SENTENCE: &[&str] = &[
    "The", " sky", " is", " blue", " because", " of", " Ray", "leigh", " scatter", "ing", ".",
];
const THOUGHT: &[&str] = &[
    "Okay",
    ",",
    " the",
    " user",
    " asks",
    " a",
    " question",
    ".",
];
pub const RUNNER_STOPPED: &str = "model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details";

/// A generation request after endpoint-specific decoding.
#[derive(Debug, Default)]
pub struct Input {
    pub model: String,
    /// Chat messages (`None` for generate).
    pub messages: Option<Vec<Value>>,
    pub prompt: Option<String>,
    pub tools: Vec<Value>,
    pub format: Option<Value>,
    pub think: Option<Value>,
    pub options: Map<String, Value>,
    pub keep_alive_zero: bool,
    /// `Some(top_logprobs)` when the request asked for `logprobs`.
    pub logprobs: Option<usize>,
    /// The request body as received (for the `echo` model).
    pub raw: Value,
}

pub struct Piece {
    pub thinking: bool,
    pub text: String,
}

/// What the fake model will send.
pub struct Plan {
    pub model: Model,
    pub pieces: Vec<Piece>,
    /// Native-shaped tool calls (`{"id","function":{"index","name","arguments"}}`).
    pub tool_calls: Vec<Value>,
    pub done_reason: &'static str,
    pub first_byte: Duration,
    pub delay: Duration,
    /// Drop the connection after this many chunks (no done chunk).
    pub cut_after: Option<usize>,
    /// End the answer without a done chunk, as Ollama does when a token repeats too often.
    pub no_done: bool,
    pub prompt_tokens: u64,
    pub started: Instant,
    /// The `logprobs` of each streamed chunk (each piece, then the tool calls); empty when
    /// the request did not ask for them.
    pub logprobs: Vec<Vec<Value>>,
}

impl Plan {
    pub fn eval_count(&self) -> u64 {
        (self.pieces.len() + self.tool_calls.len()).max(1) as u64
    }
    pub fn content(&self) -> String {
        self.pieces
            .iter()
            .filter(|p| !p.thinking)
            .map(|p| p.text.as_str())
            .collect()
    }
    pub fn thinking(&self) -> String {
        self.pieces
            .iter()
            .filter(|p| p.thinking)
            .map(|p| p.text.as_str())
            .collect()
    }
    /// The `logprobs` of streamed chunk `i` (empty when not asked for or none).
    pub fn chunk_logprobs(&self, i: usize) -> &[Value] {
        self.logprobs.get(i).map_or(&[], Vec::as_slice)
    }
    /// The `logprobs` of the whole answer: every chunk's, in order.
    pub fn all_logprobs(&self) -> Vec<Value> {
        self.logprobs.iter().flatten().cloned().collect()
    }
}

pub enum Prepared {
    /// Empty messages/prompt: `done_reason` `load` or `unload`.
    Load(&'static str),
    Run(Box<Plan>),
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        _ => false,
    }
}

pub fn prepare(st: &Shared, input: &Input, is_chat: bool) -> Result<Prepared, ApiError> {
    let started = Instant::now();
    if input.model.is_empty() {
        return Err(if is_chat {
            ApiError::new(400, "model is required")
        } else {
            ApiError::new(404, "model '' not found")
        });
    }
    let model = st
        .find_model(&input.model)
        .ok_or_else(|| ApiError::new(404, format!("model '{}' not found", input.model)))?;
    if let Some(think) = &input.think {
        match think {
            Value::Bool(_) => {}
            Value::String(s) if ["high", "medium", "low", "max"].contains(&s.as_str()) => {}
            Value::String(s) => {
                return Err(ApiError::new(
                    400,
                    format!(
                        "invalid think value: {} (must be \"high\", \"medium\", \"low\", \"max\", true, or false)",
                        go_quote(s)
                    ),
                ));
            }
            _ => {
                return Err(ApiError::new(
                    400,
                    "think must be a boolean or string (\"high\", \"medium\", \"low\", \"max\", true, or false)",
                ));
            }
        }
        if truthy(think) && !model.has(CAP_THINKING) {
            return Err(ApiError::new(
                400,
                format!("{} does not support thinking", go_quote(&input.model)),
            ));
        }
    }
    if !input.tools.is_empty() && !model.has(CAP_TOOLS) {
        return Err(ApiError::new(
            400,
            format!("{} does not support tools", model.full_name()),
        ));
    }
    let empty = match &input.messages {
        Some(m) => m.is_empty(),
        None => input.prompt.as_deref().unwrap_or("").is_empty(),
    };
    if empty {
        return Ok(Prepared::Load(if input.keep_alive_zero {
            "unload"
        } else {
            "load"
        }));
    }
    if model.base() == "error-500" {
        return Err(ApiError::runner(500, RUNNER_STOPPED));
    }
    let format = check_format(input.format.as_ref())?;
    if model.base() == "reject-schema"
        && let Some(s @ Value::Object(_)) = &format
    {
        let errs = [format!("Unrecognized schema: {}", schema::dump(s))];
        return Err(ApiError::runner(400, schema::conversion_error(&errs)));
    }
    let mut plan = Plan {
        model,
        pieces: Vec::new(),
        tool_calls: Vec::new(),
        done_reason: "stop",
        first_byte: Duration::ZERO,
        delay: st.chunk_delay,
        cut_after: None,
        no_done: false,
        prompt_tokens: prompt_tokens(input),
        started,
        logprobs: Vec::new(),
    };
    match plan.model.base() {
        "slow-first-byte" => plan.first_byte = Duration::from_millis(st.slow_ms),
        "slow-stream" => plan.delay = Duration::from_millis(200),
        "stream-cut" => plan.cut_after = Some(3),
        "dribble" => {
            let ms = input.options.get("interval_ms").and_then(Value::as_u64);
            plan.delay = Duration::from_millis(ms.unwrap_or(20));
        }
        _ => {}
    }
    let unsure = st.unsure.spans_for(&plan.model.name);
    fill(st, input, format.as_ref(), &mut plan);
    if let Some(top) = input.logprobs {
        let calls = logprobs::calls_text(&plan.tool_calls);
        let mut texts: Vec<&str> = plan.pieces.iter().map(|p| p.text.as_str()).collect();
        if !plan.tool_calls.is_empty() {
            texts.push(&calls);
        }
        plan.logprobs = logprobs::for_chunks(&texts, &unsure, top);
    }
    Ok(Prepared::Run(Box::new(plan)))
}

/// `None` = unconstrained, `Some(None)`-like "json" is represented as `Value::Null`.
fn check_format(f: Option<&Value>) -> Result<Option<Value>, ApiError> {
    match f {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) if s == "json" => Ok(Some(Value::Null)),
        Some(s @ Value::Object(_)) => match schema::check(s) {
            Ok(()) => Ok(Some(s.clone())),
            Err(errs) => Err(ApiError::runner(400, schema::conversion_error(&errs))),
        },
        Some(other) => Err(ApiError::runner(
            500,
            format!(
                "invalid format: {}; expected \"json\" or a valid JSON Schema object",
                go_quote(&other.to_string())
            ),
        )),
    }
}

fn prompt_tokens(input: &Input) -> u64 {
    let words = |s: &str| s.split_whitespace().count() as u64;
    let msgs = input.messages.iter().flatten();
    let n: u64 = msgs
        .map(|m| words(m.get("content").and_then(Value::as_str).unwrap_or("")))
        .sum();
    n + words(input.prompt.as_deref().unwrap_or("")) + 10
}

fn split(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

fn last_user_text(input: &Input) -> String {
    if let Some(msgs) = &input.messages {
        let user = msgs
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
        return user
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
    }
    input.prompt.clone().unwrap_or_default()
}

/// The valid answer for the requested format (`Value::Null` = plain `"json"`).
fn formatted(format: Option<&Value>) -> Option<String> {
    match format? {
        Value::Null => {
            Some(r#"{"answer":"The sky is blue because of Rayleigh scattering."}"#.to_owned())
        }
        s => Some(schema::instance(s).to_string()),
    }
}

/// A JSON text that parses but does not satisfy the schema.
fn schema_invalid(format: Option<&Value>) -> String {
    let Some(s @ Value::Object(_)) = format else {
        return r#""not an object""#.to_owned();
    };
    let mut v = schema::instance(s);
    if let (Value::Object(obj), Some(first)) =
        (&mut v, s.pointer("/required/0").and_then(Value::as_str))
    {
        obj.shift_remove(first);
        return v.to_string();
    }
    match v {
        Value::Array(_) => r#"{"not":"an array"}"#.to_owned(),
        _ => "[]".to_owned(),
    }
}

fn fill(st: &Shared, input: &Input, format: Option<&Value>, plan: &mut Plan) {
    let thinks = plan.model.has(CAP_THINKING) && input.think.as_ref().is_none_or(truthy);
    if thinks {
        plan.pieces.extend(THOUGHT.iter().map(|t| Piece {
            thinking: true,
            text: (*t).to_owned(),
        }));
    }
    let text = |s: Vec<String>| {
        s.into_iter().map(|text| Piece {
            thinking: false,
            text,
        })
    };
    let fallback = r#"{"answer":"The sky is blue because of Rayleigh scattering"}"#;
    if let Some(reply) = st.pop_script(&plan.model.name) {
        if let Some(calls) = scripted_calls(&reply) {
            plan.tool_calls.extend(calls);
            return;
        }
        plan.pieces.extend(text(split(&reply, 3)));
        cut_at_limit(input, plan);
        return;
    }
    match plan.model.base() {
        "long-stream" => {
            let n = input
                .options
                .get("num_predict")
                .and_then(Value::as_u64)
                .unwrap_or(100);
            if let Some(ms) = input.options.get("interval_ms").and_then(Value::as_u64) {
                plan.delay = Duration::from_millis(ms);
            }
            plan.pieces.extend((0..n).map(|_| Piece {
                thinking: false,
                text: "tok ".to_owned(),
            }));
            plan.done_reason = "length";
        }
        "echo" => plan.pieces.extend(text(split(&input.raw.to_string(), 16))),
        "tool-json" => plan.pieces.extend(text(split(&last_user_text(input), 3))),
        "text-call" => plan.pieces.extend(text(split(&text_call(input), 3))),
        "dribble" => plan.pieces.extend(text(split(&last_user_text(input), 2))),
        "bad-json" => {
            let mut v = formatted(format).unwrap_or_else(|| fallback.to_owned());
            if let Some(pos) = v.rfind(['}', ']']) {
                v.insert(pos, ',');
            }
            plan.pieces
                .extend(text(split(&format!("```json\n{v}\n```"), 4)));
        }
        "truncated" => {
            let v = formatted(format)
                .filter(|v| v.len() > 4)
                .unwrap_or_else(|| fallback.to_owned());
            let cut: String = v.chars().take(v.chars().count() * 2 / 3).collect();
            plan.pieces.extend(text(split(&cut, 4)));
            plan.done_reason = "length";
        }
        base @ ("loop-array" | "loop-string" | "loop-repeat") => {
            let kind = runaway::Kind::of(base).unwrap_or(runaway::Kind::Array);
            plan.pieces
                .extend(text(split(&runaway::answer(format, kind), 4)));
            if kind == runaway::Kind::Repeat {
                plan.no_done = runaway::cut_repeats(&mut plan.pieces);
            }
            let limit = runaway::CONTEXT_TOKENS;
            if !input.options.contains_key("num_predict") && plan.pieces.len() > limit {
                plan.pieces.truncate(limit);
                plan.done_reason = "length";
            }
        }
        "invalid-then-valid" => {
            let n = st.bump_model_count(&plan.model.name);
            let v = if n.is_multiple_of(2) {
                schema_invalid(format)
            } else {
                formatted(format).unwrap_or_else(|| fallback.to_owned())
            };
            plan.pieces.extend(text(split(&v, 4)));
        }
        _ if !input.tools.is_empty() => {
            let f = &input.tools[0]["function"];
            let args = f.get("parameters").map_or(json!({}), schema::instance);
            let args = if args.is_object() { args } else { json!({}) };
            plan.tool_calls.push(json!({ "id": call_id(),
                "function": { "index": 0, "name": f["name"].as_str().unwrap_or(""), "arguments": args } }));
        }
        _ => match formatted(format) {
            Some(v) => plan.pieces.extend(text(split(&v, 4))),
            None => plan
                .pieces
                .extend(text(SENTENCE.iter().map(|s| (*s).to_owned()).collect())),
        },
    }
    cut_at_limit(input, plan);
}

/// A call of the first tool written into the content the way Qwen's
/// template has it, which Ollama's parser missed (no `tool_calls`); the
/// fixed sentence without tools.
fn text_call(input: &Input) -> String {
    let Some(f) = input.tools.first().map(|t| &t["function"]) else {
        return SENTENCE.concat();
    };
    let args = f.get("parameters").map_or(json!({}), schema::instance);
    let call = json!({"name": f["name"], "arguments": args});
    format!("I'll look that up.\n<tool_call>\n{call}\n</tool_call>")
}

/// `options.num_predict` cuts the content pieces (scripted ones too), with `done_reason`
/// `length`.
fn cut_at_limit(input: &Input, plan: &mut Plan) {
    if let Some(limit) = input.options.get("num_predict").and_then(Value::as_u64) {
        let limit = limit as usize;
        let content = plan.pieces.iter().filter(|p| !p.thinking).count();
        if plan.model.base() != "long-stream" && limit < content {
            let keep = plan.pieces.len() - (content - limit);
            plan.pieces.truncate(keep);
            plan.done_reason = "length";
        }
    }
}

/// Native `tool_calls` scripted as `@tool_calls [{"name": …, "arguments": …}, …]`.
fn scripted_calls(reply: &str) -> Option<Vec<Value>> {
    let list = reply.strip_prefix(crate::TOOL_CALLS_SCRIPT)?;
    let calls: Vec<Value> = serde_json::from_str(list.trim()).ok()?;
    let calls = calls.into_iter().enumerate().map(|(i, c)| {
        json!({ "id": call_id(),
            "function": { "index": i, "name": c["name"], "arguments": c["arguments"] } })
    });
    Some(calls.collect())
}

/// `call_` + 8 random `[a-z0-9]`, as Ollama's rendered (classic) tool-call path.
pub fn call_id() -> String {
    const A: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut s = String::from("call_");
    for _ in 0..8 {
        s.push(A[fastrand::usize(..A.len())] as char);
    }
    s
}
