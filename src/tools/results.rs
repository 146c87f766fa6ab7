//! Which earlier call each tool result in a chat history answers.
//!
//! Clients identify the call a `tool` message answers in several ways: a
//! `tool_call_id` (OpenAI, Anthropic), a `tool_name` or `name` (Ollama), or
//! nothing at all, in which case results follow the calls of the preceding
//! assistant turn in order. [`ResultMatcher`] applies those rules as the
//! history is read; [`answered_calls`] lists the calls that got a result.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value, json};

use super::call::ToolCall;

/// Most answered calls [`answered_calls`] returns (the latest are kept).
const MAX_ANSWERED: usize = 256;

/// One call of the history, in any client shape.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryCall {
    pub name: String,
    /// The arguments as given: an object, or whatever a JSON string held.
    pub arguments: Value,
}

impl HistoryCall {
    /// `{"name","arguments"}`, as the envelope writes a call.
    pub(crate) fn envelope(&self) -> Value {
        json!({"name": self.name, "arguments": self.arguments})
    }
}

/// The name and arguments of one history call (`{"function":{…}}` or
/// flat; arguments an object or a JSON string; `parameters` accepted).
pub(crate) fn history_call(raw: &Value) -> HistoryCall {
    let func = raw.get("function").unwrap_or(raw);
    let name = func.get("name").and_then(Value::as_str).unwrap_or_default();
    let arguments = match func.get("arguments").or_else(|| func.get("parameters")) {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v) => v,
            Err(_) if s.trim().is_empty() => json!({}),
            Err(_) => Value::String(s.clone()),
        },
        Some(v) => v.clone(),
    };
    HistoryCall {
        name: name.to_owned(),
        arguments,
    }
}

/// What one tool result answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The tool name to show with the result, if known.
    pub name: Option<String>,
    /// Index (see [`ResultMatcher::call`]) of the call it answers, if known.
    pub call: Option<usize>,
}

/// Pairs tool results with the calls they answer, message by message.
#[derive(Debug, Default)]
pub(crate) struct ResultMatcher {
    calls: Vec<HistoryCall>,
    /// The assistant turn (a count) each call was made in.
    turn_of: Vec<usize>,
    turns: usize,
    by_id: HashMap<String, usize>,
    /// Calls of the latest assistant turn not answered yet, in order.
    pending: VecDeque<usize>,
}

impl ResultMatcher {
    /// An assistant turn's `tool_calls`: they become the pending calls.
    /// Returns the indices given to them.
    pub(crate) fn on_calls(&mut self, raw_calls: &[Value]) -> std::ops::Range<usize> {
        self.pending.clear();
        self.turns += 1;
        let start = self.calls.len();
        for raw in raw_calls {
            let i = self.calls.len();
            if let Some(id) = raw.get("id").and_then(Value::as_str) {
                self.by_id.insert(id.to_owned(), i);
            }
            self.calls.push(history_call(raw));
            self.turn_of.push(self.turns);
            self.pending.push_back(i);
        }
        start..self.calls.len()
    }

    /// A `tool` (or legacy `function`) message: the call it answers, found
    /// by `tool_call_id`, else by `tool_name`/`name` among the pending
    /// calls, else the next pending call. A name the message gives is the
    /// name shown even when no call matches it.
    pub(crate) fn on_result(&mut self, msg: &Map<String, Value>) -> Answer {
        let given = ["tool_name", "name"]
            .iter()
            .find_map(|k| msg.get(*k).and_then(Value::as_str))
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        let by_id = msg
            .get("tool_call_id")
            .and_then(Value::as_str)
            .and_then(|id| self.by_id.get(id).copied());
        let call = match (by_id, &given) {
            (Some(i), _) => Some(i),
            (None, Some(n)) => self
                .pending
                .iter()
                .copied()
                .find(|i| self.calls.get(*i).is_some_and(|c| &c.name == n)),
            (None, None) => self.pending.front().copied(),
        };
        if let Some(i) = call {
            self.pending.retain(|p| *p != i);
        }
        let name = given.or_else(|| call.and_then(|i| self.call(i)).map(|c| c.name.clone()));
        Answer { name, call }
    }

    /// The call at `index`.
    pub(crate) fn call(&self, index: usize) -> Option<&HistoryCall> {
        self.calls.get(index)
    }

    /// Whether the call at `index` shares its tool with another call of
    /// its turn: its result names it by its arguments too.
    pub(crate) fn shares_its_tool(&self, index: usize) -> bool {
        let (Some(call), Some(turn)) = (self.calls.get(index), self.turn_of.get(index)) else {
            return false;
        };
        self.calls
            .iter()
            .zip(&self.turn_of)
            .enumerate()
            .any(|(j, (c, t))| j != index && t == turn && c.name == call.name)
    }
}

/// The calls in `messages` that a later `tool` message answers, in order
/// (at most [`MAX_ANSWERED`], the latest).
pub(crate) fn answered_calls(messages: &[Value]) -> Vec<ToolCall> {
    let mut matcher = ResultMatcher::default();
    let mut answered: Vec<usize> = Vec::new();
    for msg in messages {
        let Some(obj) = msg.as_object() else { continue };
        let role = obj
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase();
        match role.as_str() {
            "assistant" => {
                if let Some(calls) = obj.get("tool_calls").and_then(Value::as_array)
                    && !calls.is_empty()
                {
                    matcher.on_calls(calls);
                }
            }
            "tool" | "function" => {
                if let Some(i) = matcher.on_result(obj).call
                    && !answered.contains(&i)
                {
                    answered.push(i);
                }
            }
            _ => {}
        }
    }
    let skip = answered.len().saturating_sub(MAX_ANSWERED);
    answered
        .into_iter()
        .skip(skip)
        .filter_map(|i| matcher.call(i))
        .map(|c| ToolCall {
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })
        .collect()
}

#[cfg(test)]
#[path = "results_tests.rs"]
mod tests;
