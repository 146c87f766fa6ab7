//! Tool-call emulation for models without the "tools" capability.
//! (Interface placeholder; replaced by the full implementation.)

use serde_json::Value;

use crate::validate::{Validators, Violation};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    None,
    Auto,
    Required,
    Named(String),
}

impl ToolChoice {
    pub fn parse(_v: Option<&Value>) -> Result<Self, ToolError> {
        Ok(ToolChoice::Auto)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}

pub enum ModelOutput {
    Calls(Vec<ToolCall>),
    Answer(Value),
}

pub struct ToolSet {}

impl ToolSet {
    pub fn from_request(_tools: &[Value]) -> Result<Self, ToolError> {
        Ok(Self {})
    }
    pub fn parse_value(&self, _v: &Value) -> Result<ModelOutput, ToolError> {
        Err(ToolError("unimplemented".into()))
    }
    pub fn check_call(&self, _call: &ToolCall, _validators: &Validators) -> Vec<Violation> {
        Vec::new()
    }
    pub fn repair_call(&self, _call: &mut ToolCall) -> Vec<String> {
        Vec::new()
    }
}

pub fn build_format(
    _set: &ToolSet,
    _choice: &ToolChoice,
    _parallel: bool,
    _answer: Option<&Value>,
) -> Value {
    Value::Null
}

pub fn instruction(_set: &ToolSet, _choice: &ToolChoice, _parallel: bool) -> String {
    String::new()
}

pub fn rewrite_messages(messages: &[Value], _instruction: &str) -> Vec<Value> {
    messages.to_vec()
}

pub enum StreamEvent {
    AnswerDelta(String),
    Call(ToolCall),
}

#[derive(Default)]
pub struct StreamExtractor {}

impl StreamExtractor {
    pub fn new() -> Self {
        Self {}
    }
    pub fn feed(&mut self, _delta: &str) -> Vec<StreamEvent> {
        Vec::new()
    }
    pub fn finish(self) -> Result<Vec<StreamEvent>, ToolError> {
        Ok(Vec::new())
    }
}

pub fn ollama_tool_calls(_calls: &[ToolCall], _start: usize) -> Value {
    Value::Array(Vec::new())
}

pub fn openai_tool_calls(_calls: &[ToolCall]) -> Value {
    Value::Array(Vec::new())
}
