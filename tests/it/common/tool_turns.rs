//! Tool-turn fixtures: the tools a small model misuses, a conversation with
//! a call already answered, and augur with a policy file in front of a
//! scripted model.

use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use super::{client, live::Live};

/// The scripted model's name.
pub const MODEL: &str = "scripted";

/// `get_weather(city)`.
pub fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}
    }})
}

/// `factorial(n)`.
pub fn factorial_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "factorial",
        "description": "The factorial of a number",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}},
            "required": ["n"]}
    }})
}

/// The model's reply calling `name` once with `arguments`.
pub fn call_reply(name: &str, arguments: Value) -> String {
    json!({"tool_call": {"name": name, "arguments": arguments}}).to_string()
}

/// The model's reply answering `text`.
pub fn answer_reply(text: &str) -> String {
    json!({"response": text}).to_string()
}

/// A question, the call that answered it, and the tool's result.
pub fn answered_weather() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "What is the weather like in Paris right now?"}),
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
        json!({"role": "tool", "tool_call_id": "call_1",
            "content": "{\"city\": \"Paris\", \"temperature_c\": 18, \"conditions\": \"light rain\"}"}),
    ]
}

/// augur with the policy file `policy` in front of a fake whose model
/// [`MODEL`] answers `replies` in turn.
pub async fn scripted(replies: Vec<String>, policy: &str) -> Live {
    let fake = FakeOllama::builder().script(MODEL, replies).start().await;
    Live::with_fake(fake, policy).await
}

/// POST a chat request for [`MODEL`] with `tools` and `messages`.
pub async fn chat(
    live: &Live,
    stream: bool,
    tools: Value,
    messages: Vec<Value>,
) -> reqwest::Response {
    let body = json!({"model": MODEL, "stream": stream, "tools": tools, "messages": messages});
    client()
        .post(live.url("/api/chat"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The last message augur sent upstream, as text.
pub fn last_sent_message(live: &Live) -> String {
    let sent = live.fake.last_json("/api/chat").unwrap();
    let messages = sent["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The envelope's answer branch alone, for a text answer: the `format`
/// of a re-ask.
pub fn answer_branch() -> Value {
    json!({"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]})
}

/// The text of a streamed answer's chunks, which must hold no tool call.
pub fn streamed_answer(chunks: &[Value]) -> String {
    assert!(
        chunks
            .iter()
            .all(|c| c["message"].get("tool_calls").is_none()),
        "no call goes out: {chunks:?}"
    );
    chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect()
}
