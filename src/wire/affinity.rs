//! A conversation's affinity key: a hash of the part of a generation
//! request that stays the same on every turn, so that every turn can go to
//! the Ollama server that already holds its prompt in its KV cache.
//!
//! The stable prefix, read the same way on every surface:
//!
//! ```text
//! system  = leading system/developer messages, `system`, `instructions`
//! tools   = each tool's name, in order
//! first   = the first message that is not a system message (its text),
//!           or the prompt (`/api/generate`, `/v1/completions`)
//! key     = FNV-1a 64 of (system, tools, first), at most PREFIX_BOUND
//!           bytes of their text in all, then mixed
//! ```
//!
//! Only the first non-system message counts: a later turn repeats it, so
//! turn 1 and turn 9 of one conversation share a key, while two
//! conversations under one system prompt differ. Text parts of a content
//! array count as their text joined; images and other parts do not count.
//! The hash has no seed: every process and every replica computes the same
//! key for the same prefix. A session (`X-Augur-Session`, or the API key)
//! may stand for the prefix ([`session`]).

use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, SeqAccess, Visitor},
};
use serde_json::Value;

/// Most bytes of text the key reads: system prompt, tool names and first
/// message together. A longer prefix is cut at this length.
pub(crate) const PREFIX_BOUND: usize = 16 * 1024;

/// How a route's body carries a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `messages` (Ollama `/api/chat`, OpenAI `/v1/chat/completions`).
    Chat,
    /// `system` and `prompt` (Ollama `/api/generate`, OpenAI `/v1/completions`).
    Prompt,
    /// `instructions` and `input` (OpenAI `/v1/responses`).
    Responses,
    /// `system` and `messages` (Anthropic `/v1/messages`).
    Anthropic,
}

impl Shape {
    /// The shape of a generation route's body; `None` for every other path.
    pub(crate) fn of_path(path: &str) -> Option<Shape> {
        Some(match path {
            "/api/chat" | "/v1/chat/completions" => Shape::Chat,
            "/api/generate" | "/v1/completions" => Shape::Prompt,
            "/v1/responses" => Shape::Responses,
            "/v1/messages" => Shape::Anthropic,
            _ => return None,
        })
    }
}

/// The key of a conversation's stable prefix; `None` when the body is not
/// a JSON object of its shape or holds no prefix at all.
pub(crate) fn prefix(shape: Shape, body: &[u8]) -> Option<u64> {
    let head: Head = serde_json::from_slice(body).ok()?;
    let mut h = Bounded::new();
    let (system, first) = match shape {
        Shape::Chat | Shape::Anthropic => (head.system.as_ref(), head.messages.first.as_ref()),
        Shape::Prompt => (head.system.as_ref(), None),
        Shape::Responses => (head.instructions.as_ref(), None),
    };
    if let Some(s) = system {
        h.piece(b's', |h| text(s, h));
    }
    for m in &head.messages.system {
        h.piece(b's', |h| text(m, h));
    }
    if let Some(Value::Array(items)) = &head.input {
        for item in items.iter().take_while(|i| is_system(i)) {
            h.piece(b's', |h| {
                text(item.get("content").unwrap_or(&Value::Null), h)
            });
        }
    }
    for tool in head.tools.iter().flatten() {
        h.piece(b't', |h| h.write(tool_name(tool).as_bytes()));
    }
    let first = match shape {
        Shape::Chat | Shape::Anthropic => first.cloned(),
        Shape::Prompt => head.prompt,
        Shape::Responses => match head.input {
            Some(Value::Array(items)) => items
                .into_iter()
                .find(|i| !is_system(i))
                .map(|i| i.get("content").cloned().unwrap_or(i)),
            other => other,
        },
    };
    if let Some(first) = &first {
        h.piece(b'm', |h| text(first, h));
    }
    (h.written > 0).then(|| mix(h.state))
}

/// The key of a session named by the client or its credentials.
pub(crate) fn session(id: &str) -> u64 {
    let mut h = Bounded::new();
    h.piece(b'k', |h| h.write(id.as_bytes()));
    mix(h.state)
}

/// A stable 64-bit hash of `bytes` (FNV-1a, then mixed).
pub(crate) fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h = Bounded::new();
    h.write(bytes);
    mix(h.state)
}

/// The finalizer of MurmurHash3: spreads every input bit over the output.
pub(crate) fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// FNV-1a over at most [`PREFIX_BOUND`] bytes of text.
struct Bounded {
    state: u64,
    written: usize,
}

impl Bounded {
    fn new() -> Self {
        Self {
            state: 0xcbf2_9ce4_8422_2325,
            written: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let room = PREFIX_BOUND.saturating_sub(self.written);
        for &b in &bytes[..bytes.len().min(room)] {
            self.state ^= u64::from(b);
            self.state = self.state.wrapping_mul(0x0100_0000_01b3);
        }
        self.written += bytes.len().min(room);
    }

    /// A tagged piece, ended by a byte no UTF-8 text holds.
    fn piece(&mut self, tag: u8, f: impl FnOnce(&mut Self)) {
        self.fold(tag);
        f(self);
        self.fold(0xff);
    }

    /// A separator, outside the bound.
    fn fold(&mut self, b: u8) {
        self.state ^= u64::from(b);
        self.state = self.state.wrapping_mul(0x0100_0000_01b3);
    }
}

/// The text of a content value: a string, or the text of its parts.
fn text(v: &Value, h: &mut Bounded) {
    match v {
        Value::String(s) => h.write(s.as_bytes()),
        Value::Array(parts) => {
            for part in parts {
                match part {
                    Value::String(s) => h.write(s.as_bytes()),
                    Value::Object(o) => {
                        if let Some(Value::String(s)) = o.get("text") {
                            h.write(s.as_bytes());
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn is_system(item: &Value) -> bool {
    matches!(
        item.get("role").and_then(Value::as_str),
        Some("system" | "developer")
    )
}

/// A tool's name in any surface's shape (`function.name` or `name`), else
/// its type (a tool the upstream runs, `web_search`).
fn tool_name(tool: &Value) -> &str {
    tool.get("function")
        .and_then(|f| f.get("name"))
        .or_else(|| tool.get("name"))
        .or_else(|| tool.get("type"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The fields of a body the key reads; the rest is skipped unread.
#[derive(Deserialize, Default)]
struct Head {
    #[serde(default)]
    system: Option<Value>,
    #[serde(default)]
    instructions: Option<Value>,
    #[serde(default)]
    prompt: Option<Value>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    messages: FirstTurn,
}

/// The leading system messages and the first other message's content; the
/// messages after it are skipped without being built.
#[derive(Default)]
struct FirstTurn {
    system: Vec<Value>,
    first: Option<Value>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Value,
}

impl<'de> Deserialize<'de> for FirstTurn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = FirstTurn;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of messages")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstTurn, A::Error> {
                let mut turn = FirstTurn::default();
                while turn.first.is_none() {
                    let Some(m) = seq.next_element::<Message>()? else {
                        return Ok(turn);
                    };
                    match m.role.as_deref() {
                        Some("system" | "developer") => turn.system.push(m.content),
                        _ => turn.first = Some(m.content),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(turn)
            }

            fn visit_unit<E>(self) -> Result<FirstTurn, E> {
                Ok(FirstTurn::default())
            }
        }
        d.deserialize_any(Seq)
    }
}

#[cfg(test)]
#[path = "affinity_tests.rs"]
mod tests;
