//! [`ToolChoice`]: the request's `tool_choice`, parsed against a [`ToolSet`].

use serde_json::Value;

use super::error::ToolError;
use super::spec::ToolSet;

/// What the model may do with the declared tools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Call one of the tools or answer in text (the default).
    #[default]
    Auto,
    /// Never call a tool. The caller does not emulate: it forwards the
    /// request without `tools` (and with the client's own `format`).
    None,
    /// Must call at least one tool; no text answer.
    Required,
    /// Must call exactly this tool (calls to it only); no text answer.
    Named(String),
}

impl ToolChoice {
    /// Parse `tool_choice`. Absent or `null` ⇒ `Auto`.
    ///
    /// Accepted: `"auto"`, `"none"`, `"required"` (alias `"any"`),
    /// `{"type":"function","function":{"name":…}}`, `{"type":"function","name":…}`,
    /// `{"type":"tool","name":…}` and `{"type":"auto"|"none"|"required"|"any"}`.
    /// A named tool that is not declared, or any other value, is a
    /// [`ToolError`] (HTTP 400).
    pub fn from_request(value: Option<&Value>, set: &ToolSet) -> Result<ToolChoice, ToolError> {
        let value = match value {
            None | Some(Value::Null) => return Ok(ToolChoice::Auto),
            Some(v) => v,
        };
        if let Some(s) = value.as_str() {
            return keyword(s).ok_or_else(|| ToolError::InvalidToolChoice(value.to_string()));
        }
        let obj = value
            .as_object()
            .ok_or_else(|| ToolError::InvalidToolChoice(value.to_string()))?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("function");
        if kind != "function" && kind != "tool" {
            return keyword(kind).ok_or_else(|| ToolError::InvalidToolChoice(value.to_string()));
        }
        let name = obj
            .get("function")
            .and_then(|f| f.get("name"))
            .or_else(|| obj.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidToolChoice(value.to_string()))?;
        if set.get(name).is_none() {
            return Err(ToolError::UnknownToolChoice(name.to_owned()));
        }
        Ok(ToolChoice::Named(name.to_owned()))
    }

    /// False for [`ToolChoice::None`]: the request is forwarded without tools.
    pub fn emulates(&self) -> bool {
        !matches!(self, ToolChoice::None)
    }

    /// True when the model may answer in text instead of calling a tool.
    pub fn allows_answer(&self) -> bool {
        matches!(self, ToolChoice::Auto | ToolChoice::None)
    }
}

fn keyword(s: &str) -> Option<ToolChoice> {
    match s {
        "auto" => Some(ToolChoice::Auto),
        "none" => Some(ToolChoice::None),
        "required" | "any" => Some(ToolChoice::Required),
        _ => None,
    }
}

#[cfg(test)]
#[path = "choice_tests.rs"]
mod tests;
