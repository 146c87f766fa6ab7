//! The OpenAI-compatible layer: `/v1/chat/completions`, `/v1/completions` (JSON with a
//! trailing newline, or SSE `data: …\n\n` chunks ending with `data: [DONE]`),
//! `/v1/embeddings`, `/v1/models[/:model]`, and errors in the OpenAI error shape.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::catalog;
use crate::logprobs;
use crate::manage::{inputs, vector};
use crate::native::{paced_body, whole};
use crate::plan::{self, Input, Plan, Prepared};
use crate::wire::{self, ApiError, JSON, SSE, go_json, respond};

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

struct Req {
    input: Input,
    stream: bool,
    include_usage: bool,
}

fn decode(v: &Value, chat: bool) -> Result<Req, ApiError> {
    let mut options = Map::new();
    for (from, to) in [
        ("max_tokens", "num_predict"),
        ("max_completion_tokens", "num_predict"),
        ("seed", "seed"),
        ("stop", "stop"),
        ("frequency_penalty", "frequency_penalty"),
        ("presence_penalty", "presence_penalty"),
    ] {
        if let Some(x) = v.get(from).filter(|x| !x.is_null()) {
            options.insert(to.into(), x.clone());
        }
    }
    options.insert(
        "temperature".into(),
        v.get("temperature").cloned().unwrap_or(json!(1.0)),
    );
    options.insert(
        "top_p".into(),
        v.get("top_p").cloned().unwrap_or(json!(1.0)),
    );
    let format = match v.pointer("/response_format/type").and_then(Value::as_str) {
        Some("json_object") => Some(json!("json")),
        Some("json_schema") => v.pointer("/response_format/json_schema/schema").cloned(),
        _ => None,
    };
    let think = match v
        .get("reasoning_effort")
        .or(v.pointer("/reasoning/effort"))
        .and_then(Value::as_str)
    {
        None => None,
        Some("none") => Some(json!(false)),
        Some("minimal") => Some(json!("low")),
        Some("xhigh" | "ultra") => Some(json!("max")),
        Some(e @ ("low" | "medium" | "high" | "max")) => Some(json!(e)),
        Some(e) => {
            return Err(ApiError::new(
                400,
                format!(
                    "invalid reasoning value: '{e}' (must be \"low\", \"medium\", \"high\", \"max\", or \"none\")"
                ),
            ));
        }
    };
    let mut input = Input {
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        tools: v
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        format,
        think,
        options,
        raw: v.clone(),
        ..Input::default()
    };
    if chat {
        let msgs = v
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if msgs.is_empty() {
            return Err(ApiError::new(400, "[] is too short - 'messages'"));
        }
        let msgs = msgs.iter().map(|m| {
            json!({ "role": m.get("role").and_then(Value::as_str).unwrap_or(""), "content": text_of(m.get("content")) })
        });
        input.messages = Some(msgs.collect());
    } else {
        match v.get("prompt") {
            Some(Value::String(s)) => input.prompt = Some(s.clone()),
            None | Some(Value::Null) => input.prompt = Some(String::new()),
            Some(other) => {
                return Err(ApiError::new(
                    400,
                    format!("invalid type for 'prompt' field: {}", kind(other)),
                ));
            }
        }
    }
    // The chat handler checks `top_logprobs` first; the completions layer maps `logprobs: N`
    // (N > 0) to `top_logprobs` and never returns the logprobs.
    if chat {
        input.logprobs = logprobs::asked(v, "ChatCompletionRequest")?;
    } else if v
        .get("logprobs")
        .and_then(Value::as_i64)
        .is_some_and(|n| n > 20)
    {
        return Err(ApiError::new(400, "top_logprobs must be between 0 and 20"));
    }
    let stream = v.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = v
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(Req {
        input,
        stream,
        include_usage,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "[]interface {}",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        _ => "map[string]interface {}",
    }
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn openai_calls(p: &Plan) -> Vec<Value> {
    p.tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({ "id": c["id"], "index": i, "type": "function", "function": {
                "name": c["function"]["name"], "arguments": c["function"]["arguments"].to_string() } })
        })
        .collect()
}

fn finish(p: &Plan) -> &'static str {
    match p.done_reason {
        "length" => "length",
        _ if !p.tool_calls.is_empty() => "tool_calls",
        _ => "stop",
    }
}

fn usage(p: &Plan) -> Value {
    let c = p.eval_count();
    json!({ "prompt_tokens": p.prompt_tokens, "completion_tokens": c, "total_tokens": p.prompt_tokens + c })
}

/// A streamed choice: the delta, and the `logprobs` of the tokens it carries, if any.
fn chunk_choice(delta: Map<String, Value>, logprobs: &[Value]) -> Value {
    let mut c = json!({ "index": 0, "delta": delta, "finish_reason": null });
    if !logprobs.is_empty() {
        c["logprobs"] = json!({ "content": logprobs });
    }
    c
}

fn sse(v: &Value) -> Bytes {
    let mut b = b"data: ".to_vec();
    b.extend(go_json(v));
    b.extend_from_slice(b"\n\n");
    Bytes::from(b)
}

async fn run(st: Arc<Shared>, body: Bytes, chat: bool) -> Response {
    let r = wire::parse_body(
        &body,
        if chat {
            "ChatCompletionRequest"
        } else {
            "CompletionRequest"
        },
    )
    .and_then(|v| decode(&v, chat));
    let req = match r {
        Ok(r) => r,
        Err(e) => return e.openai(),
    };
    let plan = match plan::prepare(&st, &req.input, chat) {
        Ok(Prepared::Run(p)) => *p,
        Ok(Prepared::Load(_)) => return ApiError::new(400, "prompt is required").openai(),
        Err(e) => return e.openai(),
    };
    if plan.first_byte > Duration::ZERO {
        tokio::time::sleep(plan.first_byte).await;
    }
    let id = format!(
        "{}-{}",
        if chat { "chatcmpl" } else { "cmpl" },
        fastrand::u32(0..999)
    );
    let created = unix_now();
    let model = req.input.model.clone();
    let head = move |object: &str| json!({ "id": id, "object": object, "created": created, "model": model, "system_fingerprint": "fp_ollama" });
    if !req.stream {
        let mut v = head(if chat {
            "chat.completion"
        } else {
            "text_completion"
        });
        let content = plan.content();
        let choice = if chat {
            let mut msg = json!({ "role": "assistant", "content": content });
            let reasoning = plan.thinking();
            if !reasoning.is_empty() {
                msg["reasoning"] = json!(reasoning);
            }
            if !plan.tool_calls.is_empty() {
                msg["tool_calls"] = json!(openai_calls(&plan));
            }
            let mut choice = json!({ "index": 0, "message": msg, "finish_reason": finish(&plan) });
            let logprobs = plan.all_logprobs();
            if !logprobs.is_empty() {
                choice["logprobs"] = json!({ "content": logprobs });
            }
            choice
        } else {
            json!({ "text": content, "index": 0, "finish_reason": finish(&plan) })
        };
        v["choices"] = json!([choice]);
        v["usage"] = usage(&plan);
        let mut body = go_json(&v);
        body.push(b'\n');
        return whole(&plan, &st.counters, JSON, body).await;
    }
    let include_usage = req.include_usage;
    let body = paced_body(plan, st.counters.clone(), move |p, i| {
        let n = p.pieces.len();
        let calls = usize::from(!p.tool_calls.is_empty());
        let mut v = head(if chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        });
        let choice = if let Some(piece) = p.pieces.get(i) {
            if chat {
                let mut d = Map::new();
                if i == 0 {
                    d.insert("role".into(), json!("assistant"));
                }
                d.insert(
                    "content".into(),
                    json!(if piece.thinking {
                        ""
                    } else {
                        piece.text.as_str()
                    }),
                );
                if piece.thinking {
                    d.insert("reasoning".into(), json!(piece.text));
                }
                chunk_choice(d, p.chunk_logprobs(i))
            } else {
                json!({ "text": piece.text, "index": 0, "finish_reason": null })
            }
        } else if calls == 1 && i == n {
            let mut d = Map::new();
            if i == 0 {
                d.insert("role".into(), json!("assistant"));
            }
            d.insert("content".into(), json!(""));
            d.insert("tool_calls".into(), json!(openai_calls(p)));
            chunk_choice(d, p.chunk_logprobs(i))
        } else if i == n + calls {
            let last = if chat {
                json!({ "index": 0, "delta": {}, "finish_reason": finish(p) })
            } else {
                json!({ "text": "", "index": 0, "finish_reason": finish(p) })
            };
            if !include_usage {
                last
            } else {
                // Ollama writes the usage chunk with the last one, at once.
                let mut u = v.clone();
                v["choices"] = json!([last]);
                u["choices"] = json!([]);
                u["usage"] = usage(p);
                let mut both = sse(&v).to_vec();
                both.extend_from_slice(&sse(&u));
                return Some(Bytes::from(both));
            }
        } else if i == n + calls + 1 {
            return Some(Bytes::from_static(b"data: [DONE]\n\n"));
        } else {
            return None;
        };
        v["choices"] = json!([choice]);
        Some(sse(&v))
    });
    respond(200, SSE, body)
}

pub async fn chat(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    run(st, body, true).await
}

pub async fn completions(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    run(st, body, false).await
}

pub async fn embeddings(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let r = wire::parse_body(&body, "EmbedRequest").and_then(|v| {
        let model = v.get("model").and_then(Value::as_str).unwrap_or("").to_owned();
        if st.find_model(&model).is_none() {
            return Err(ApiError::new(404, format!("model \"{model}\" not found, try pulling it first")));
        }
        if let Some(f) = v.get("encoding_format").and_then(Value::as_str).filter(|f| !["float", "base64"].contains(f)) {
            return Err(ApiError::new(400, format!("Invalid value for 'encoding_format' = {f}. Supported values: ['float', 'base64'].")));
        }
        let texts = inputs(v.get("input"))?;
        let data: Vec<Value> = texts.iter().enumerate()
            .map(|(i, t)| json!({ "object": "embedding", "embedding": vector(t), "index": i }))
            .collect();
        let tokens: usize = texts.iter().map(|t| t.split_whitespace().count().max(1)).sum();
        Ok(json!({ "object": "list", "data": data, "model": model,
            "usage": { "prompt_tokens": tokens, "total_tokens": tokens } }))
    });
    match r {
        Ok(v) => {
            let mut b = go_json(&v);
            b.push(b'\n');
            respond(200, JSON, b)
        }
        Err(e) => e.openai(),
    }
}

pub async fn models(State(st): State<Arc<Shared>>) -> Response {
    let mut b = go_json(&json!({ "object": "list", "data": catalog::openai_models(&st) }));
    b.push(b'\n');
    crate::faults::listing(st.listing_fault, respond(200, JSON, b)).await
}

pub async fn model(State(st): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    match st.find_model(&name) {
        Some(m) => {
            let mut b = go_json(&catalog::openai_model(&m));
            b.push(b'\n');
            respond(200, JSON, b)
        }
        None => ApiError::new(404, format!("model \"{name}\" not found")).openai(),
    }
}
