//! What an attempt expects of the model's answer, and what it produced.

use serde_json::{Map, Value};

use crate::{
    error::{ProxyError, UpstreamKind},
    tools::{ToolCall, ToolChoice, ToolSet},
    validate::Violation,
};

use super::super::{plan::Route, screen::CallScreen};

/// What the model's text is expected to be.
#[derive(Clone)]
pub(crate) enum Expect {
    /// Any JSON object (`format: "json"`).
    Json,
    /// JSON valid against the client's original schema.
    Schema(Value),
    /// The tool envelope: calls to declared tools, or an answer; with
    /// `think`, as the answer of the emulated-thinking object. `screen`
    /// judges the calls against the conversation. With `text`, calls
    /// written as text instead ([`crate::pipeline::attempt::text_mode`]).
    Tools {
        set: ToolSet,
        answer_schema: Option<Value>,
        json_answer: bool,
        think: bool,
        screen: std::sync::Arc<CallScreen>,
        text: Option<TextMode>,
    },
    /// `{"reasoning": "...", "answer": ...}` for emulated thinking.
    Think {
        answer_schema: Option<Value>,
        json_answer: bool,
    },
    /// No constraint (nothing to validate).
    Text,
}

/// One interpreted answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Interp {
    pub content: String,
    pub thinking: Option<String>,
    pub calls: Vec<ToolCall>,
    pub violations: Vec<Violation>,
    pub repairs: Vec<String>,
    /// Some of the answer could not be checked against the client's schema
    /// (reported, never taken as valid).
    pub unchecked: bool,
    /// Text mode: the answer could not be read as calls the request
    /// allows, so a grammar-mode attempt may follow.
    pub unparsed: bool,
    /// A native-tools model called tools and said nothing else
    /// ([`crate::pipeline::checks::calls_only`]): its message goes out as
    /// it came.
    pub native_calls: bool,
}

/// The final result of the attempts.
pub(crate) struct Completed {
    /// The last upstream response object (metrics, done_reason, …).
    pub response: Value,
    pub interp: Interp,
    pub attempts: u32,
    /// Still invalid after the last attempt.
    pub invalid: bool,
    /// How sure the model was of the answer, when scored and known.
    pub confidence: Option<crate::confidence::Confidence>,
}

/// The text a route's answer carries.
pub(crate) fn answer_text(route: Route, response: &Value) -> String {
    let v = match route {
        Route::Chat => response.pointer("/message/content"),
        Route::Generate => response.get("response"),
    };
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Whether the upstream's grammar converter rejected the schema.
pub(crate) fn is_schema_rejection(e: &ProxyError) -> bool {
    matches!(
        e,
        ProxyError::Upstream {
            kind: UpstreamKind::SchemaRejected,
            ..
        }
    )
}

/// A streamed attempt that failed before anything of it was sent: the
/// whole-answer path goes on from it instead of asking the same again.
pub(crate) struct Seed {
    /// The model's text.
    pub text: String,
    /// The token limit cut it.
    pub truncated: bool,
}

/// Whether an answer ended before the model finished it: cut by the token
/// limit (`done_reason: "length"`), or ended without a done chunk, as
/// Ollama ends an answer once the model repeats one token too often (a
/// whole body then says `"done": false`).
pub(crate) fn cut_short(response: &Value) -> bool {
    response.get("done_reason").and_then(Value::as_str) == Some("length")
        || response.get("done").and_then(Value::as_bool) != Some(true)
}

/// What text mode needs beside the tools.
#[derive(Debug, Clone)]
pub(crate) struct TextMode {
    /// The tool choice, which no grammar enforces here.
    pub choice: ToolChoice,
    /// The request as grammar mode sends it, for an answer that cannot be
    /// read.
    pub grammar: Map<String, Value>,
}
