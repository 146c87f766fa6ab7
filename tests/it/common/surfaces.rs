//! One tool conversation sent on each of augur's four surfaces, whole and
//! streamed, and each surface's answer read back as the same neutral
//! [`Answer`]: the calls (name, arguments) in order and the text.
//!
//! A conversation is written in Ollama's shape (`/api/chat` messages, with
//! `tool_calls` on assistant messages and `tool` messages naming the tool);
//! [`request`] translates it into the other surfaces' shapes the way their
//! official SDKs send it.

use serde_json::{Map, Value, json};

use super::{events, ndjson};

/// Where a request goes and how its answer comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Ollama,
    OpenAi,
    Responses,
    Anthropic,
}

impl Surface {
    pub const ALL: [Surface; 4] = [
        Surface::Ollama,
        Surface::OpenAi,
        Surface::Responses,
        Surface::Anthropic,
    ];

    pub fn path(self) -> &'static str {
        match self {
            Surface::Ollama => "/api/chat",
            Surface::OpenAi => "/v1/chat/completions",
            Surface::Responses => "/v1/responses",
            Surface::Anthropic => "/v1/messages",
        }
    }
}

/// An answer as any surface carries it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// (tool name, arguments) in order.
    pub calls: Vec<(String, Value)>,
    pub text: String,
    /// augur's `augur_repaired` (streamed Ollama done chunk), if any.
    pub repaired: Option<String>,
}

/// A call's id in the translated conversation.
fn call_id(turn: usize, i: usize) -> String {
    format!("call_{turn}_{i}")
}

fn role(m: &Value) -> &str {
    m["role"].as_str().unwrap_or_default()
}

fn text(m: &Value) -> String {
    m["content"].as_str().unwrap_or_default().to_string()
}

/// The (name, arguments) of an Ollama-shaped assistant message's calls.
fn calls_of(m: &Value) -> Vec<(String, Value)> {
    m["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = &c["function"];
                    let name = f["name"].as_str().unwrap_or_default().to_string();
                    (name, f["arguments"].clone())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The id of call `i` of the assistant message at `turn`: its own `id`
/// when the conversation gives one.
fn id_of(m: &Value, turn: usize, i: usize) -> String {
    m["tool_calls"][i]["id"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| call_id(turn, i))
}

/// The ids of the calls, in conversation order, that `tool` messages answer:
/// a `tool_call_id` the message gives, else the next unanswered call of the
/// last assistant message.
fn tool_ids(messages: &[Value]) -> Vec<Option<String>> {
    let mut pending: Vec<String> = Vec::new();
    messages
        .iter()
        .enumerate()
        .map(|(turn, m)| match role(m) {
            "assistant" => {
                pending = (0..calls_of(m).len()).map(|i| id_of(m, turn, i)).collect();
                pending.reverse();
                None
            }
            "tool" => match m["tool_call_id"].as_str() {
                Some(id) => {
                    pending.retain(|p| p != id);
                    Some(id.to_string())
                }
                None => pending.pop(),
            },
            _ => None,
        })
        .collect()
}

/// The request body for `surface`: `model`, Ollama-shaped `tools` and
/// `messages`, `stream`.
pub fn request(
    surface: Surface,
    model: &str,
    tools: &[Value],
    messages: &[Value],
    stream: bool,
) -> Value {
    match surface {
        Surface::Ollama => {
            json!({"model": model, "stream": stream, "tools": tools, "messages": messages})
        }
        Surface::OpenAi => json!({"model": model, "stream": stream, "tools": tools,
            "messages": openai_messages(messages)}),
        Surface::Responses => {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| {
                    let f = &t["function"];
                    json!({"type": "function", "name": f["name"],
                        "description": f["description"], "parameters": f["parameters"]})
                })
                .collect();
            json!({"model": model, "stream": stream, "tools": tools,
                "input": responses_input(messages)})
        }
        Surface::Anthropic => {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| {
                    let f = &t["function"];
                    json!({"name": f["name"], "description": f["description"],
                        "input_schema": f["parameters"]})
                })
                .collect();
            let system: Vec<String> = messages
                .iter()
                .filter(|m| role(m) == "system")
                .map(text)
                .collect();
            let mut body = json!({"model": model, "stream": stream, "max_tokens": 1024,
                "tools": tools, "messages": anthropic_messages(messages)});
            if !system.is_empty() {
                body["system"] = Value::String(system.join("\n"));
            }
            body
        }
    }
}

fn openai_messages(messages: &[Value]) -> Vec<Value> {
    let ids = tool_ids(messages);
    messages
        .iter()
        .enumerate()
        .map(|(turn, m)| match role(m) {
            "assistant" if m.get("tool_calls").is_some() => {
                let calls: Vec<Value> = calls_of(m)
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, args))| {
                        json!({"id": id_of(m, turn, i), "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}})
                    })
                    .collect();
                json!({"role": "assistant", "content": null, "tool_calls": calls})
            }
            "tool" => json!({"role": "tool", "tool_call_id": ids[turn], "content": text(m)}),
            r => json!({"role": r, "content": text(m)}),
        })
        .collect()
}

fn responses_input(messages: &[Value]) -> Vec<Value> {
    let ids = tool_ids(messages);
    let mut out = Vec::new();
    for (turn, m) in messages.iter().enumerate() {
        match role(m) {
            "assistant" if m.get("tool_calls").is_some() => {
                for (i, (name, args)) in calls_of(m).into_iter().enumerate() {
                    out.push(
                        json!({"type": "function_call", "call_id": id_of(m, turn, i),
                        "name": name, "arguments": args.to_string()}),
                    );
                }
            }
            "tool" => out.push(json!({"type": "function_call_output",
                "call_id": ids[turn], "output": text(m)})),
            r => out.push(json!({"role": r, "content": text(m)})),
        }
    }
    out
}

fn anthropic_messages(messages: &[Value]) -> Vec<Value> {
    let ids = tool_ids(messages);
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for (turn, m) in messages.iter().enumerate() {
        let (r, blocks) = match role(m) {
            "system" => continue,
            "assistant" => {
                let mut blocks = Vec::new();
                if !text(m).is_empty() {
                    blocks.push(json!({"type": "text", "text": text(m)}));
                }
                for (i, (name, args)) in calls_of(m).into_iter().enumerate() {
                    blocks.push(json!({"type": "tool_use", "id": id_of(m, turn, i),
                        "name": name, "input": args}));
                }
                ("assistant", blocks)
            }
            "tool" => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": ids[turn], "content": text(m)})],
            ),
            _ => ("user", vec![json!({"type": "text", "text": text(m)})]),
        };
        match out.last_mut() {
            Some((last, b)) if last == r => b.extend(blocks),
            _ => out.push((r.to_string(), blocks)),
        }
    }
    out.into_iter()
        .map(|(r, blocks)| json!({"role": r, "content": blocks}))
        .collect()
}

/// Read `body` (the whole response text) as `surface` renders an answer.
pub fn answer(surface: Surface, stream: bool, body: &str) -> Result<Answer, String> {
    let parsed = |s: &str| serde_json::from_str::<Value>(s).map_err(|e| format!("{e}: {s}"));
    match (surface, stream) {
        (Surface::Ollama, false) => {
            let v = parsed(body)?;
            Ok(Answer {
                calls: calls_of(&v["message"]),
                text: text(&v["message"]),
                repaired: None,
            })
        }
        (Surface::Ollama, true) => {
            let chunks = ndjson(body);
            let mut out = Answer::default();
            for c in &chunks {
                out.calls.extend(calls_of(&c["message"]));
                out.text
                    .push_str(c["message"]["content"].as_str().unwrap_or_default());
                if let Some(r) = c.get("augur_repaired").and_then(Value::as_str) {
                    out.repaired = Some(r.to_string());
                }
            }
            Ok(out)
        }
        (Surface::OpenAi, false) => {
            let v = parsed(body)?;
            let m = &v["choices"][0]["message"];
            let mut out = Answer {
                text: text(m),
                ..Answer::default()
            };
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                let f = &c["function"];
                let args = parsed(f["arguments"].as_str().unwrap_or_default())?;
                out.calls
                    .push((f["name"].as_str().unwrap_or_default().into(), args));
            }
            Ok(out)
        }
        (Surface::OpenAi, true) => openai_stream(body),
        (Surface::Responses, false) => responses_output(&parsed(body)?["output"]),
        (Surface::Responses, true) => {
            let done = events(body)
                .into_iter()
                .find(|(e, _)| e == "response.completed")
                .ok_or_else(|| format!("no response.completed: {body}"))?;
            responses_output(&done.1["response"]["output"])
        }
        (Surface::Anthropic, false) => anthropic_content(&parsed(body)?["content"]),
        (Surface::Anthropic, true) => anthropic_stream(body),
    }
}

fn openai_stream(body: &str) -> Result<Answer, String> {
    let mut out = Answer::default();
    let mut calls: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(data).map_err(|e| format!("{e}: {data}"))?;
        let delta = &v["choices"][0]["delta"];
        out.text
            .push_str(delta["content"].as_str().unwrap_or_default());
        for c in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = c["index"].as_u64().unwrap_or_default() as usize;
            while calls.len() <= i {
                calls.push(Default::default());
            }
            let f = &c["function"];
            calls[i].0.push_str(f["name"].as_str().unwrap_or_default());
            calls[i]
                .1
                .push_str(f["arguments"].as_str().unwrap_or_default());
        }
    }
    for (name, args) in calls {
        let args = serde_json::from_str(&args).map_err(|e| format!("{e}: {args}"))?;
        out.calls.push((name, args));
    }
    Ok(out)
}

fn responses_output(output: &Value) -> Result<Answer, String> {
    let mut out = Answer::default();
    for item in output.as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => {
                let args = item["arguments"].as_str().unwrap_or_default();
                let args = serde_json::from_str(args).map_err(|e| format!("{e}: {args}"))?;
                out.calls
                    .push((item["name"].as_str().unwrap_or_default().into(), args));
            }
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    out.text.push_str(part["text"].as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

fn anthropic_content(content: &Value) -> Result<Answer, String> {
    let mut out = Answer::default();
    for block in content.as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("tool_use") => out.calls.push((
                block["name"].as_str().unwrap_or_default().into(),
                block["input"].clone(),
            )),
            Some("text") => out
                .text
                .push_str(block["text"].as_str().unwrap_or_default()),
            _ => {}
        }
    }
    Ok(out)
}

fn anthropic_stream(body: &str) -> Result<Answer, String> {
    // Blocks by index: (type, name, text or partial JSON).
    let mut blocks: Map<String, Value> = Map::new();
    let mut order: Vec<String> = Vec::new();
    for (event, v) in events(body) {
        let i = v["index"].to_string();
        match event.as_str() {
            "content_block_start" => {
                order.push(i.clone());
                let b = &v["content_block"];
                blocks.insert(
                    i,
                    json!([b["type"], b["name"], b["text"].as_str().unwrap_or("")]),
                );
            }
            "content_block_delta" => {
                let d = &v["delta"];
                let piece = d["text"]
                    .as_str()
                    .or(d["partial_json"].as_str())
                    .unwrap_or_default();
                if let Some(Value::Array(b)) = blocks.get_mut(&i) {
                    let joined = format!("{}{piece}", b[2].as_str().unwrap_or_default());
                    b[2] = Value::String(joined);
                }
            }
            _ => {}
        }
    }
    let mut out = Answer::default();
    for i in order {
        let b = &blocks[&i];
        let body = b[2].as_str().unwrap_or_default();
        match b[0].as_str() {
            Some("tool_use") => {
                let args = if body.is_empty() { "{}" } else { body };
                let args = serde_json::from_str(args).map_err(|e| format!("{e}: {args}"))?;
                out.calls
                    .push((b[1].as_str().unwrap_or_default().into(), args));
            }
            Some("text") => out.text.push_str(body),
            _ => {}
        }
    }
    Ok(out)
}
