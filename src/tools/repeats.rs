//! Calls that repeat one already answered in the conversation.
//!
//! A small model that sees a tool result often calls the same tool with the
//! same arguments again instead of answering. Two calls are the same when
//! they name the same tool and their arguments are equal as normalized
//! JSON: key order ignored, numbers by value (`5` = `5.0`), strings ignoring
//! case and surrounding whitespace, `null` members ignored, and a string
//! holding a number equal to that number (`"5"` = `5`).

use serde_json::{Map, Value};

use super::call::ToolCall;

/// Deepest nesting compared; deeper values are compared as they are.
const MAX_DEPTH: usize = 32;

/// Whether `call` repeats one of `answered` (see the module docs).
pub(crate) fn repeats_answered(call: &ToolCall, answered: &[ToolCall]) -> bool {
    answered
        .iter()
        .any(|a| a.name == call.name && same_value(&a.arguments, &call.arguments, 0))
}

/// Arguments equal as normalized JSON.
fn same_value(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return a == b;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let x = present(x);
            let y = present(y);
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .find(|(k2, _)| k2 == k)
                        .is_some_and(|(_, w)| same_value(v, w, depth + 1))
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_value(v, w, depth + 1))
        }
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(s), Value::Number(n)) | (Value::Number(n), Value::String(s)) => {
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        (Value::String(x), Value::String(y)) => x.trim().to_lowercase() == y.trim().to_lowercase(),
        _ => a == b,
    }
}

/// The members of `m` that are not `null`.
fn present(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    m.iter().filter(|(_, v)| !v.is_null()).collect()
}

#[cfg(test)]
#[path = "repeats_tests.rs"]
mod tests;
