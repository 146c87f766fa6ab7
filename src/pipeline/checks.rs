//! Stage 7's building blocks as the pipeline uses them: parse a model's
//! text as JSON (repairing when allowed), validate it, and phrase retry
//! feedback.

use serde_json::Value;

use crate::validate::{Validators, Violation};

/// A model answer parsed (and maybe repaired) and checked.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The best JSON value found, if any.
    pub value: Option<Value>,
    /// What was repaired to get it.
    pub repairs: Vec<String>,
    /// Violations left (empty = valid).
    pub violations: Vec<Violation>,
}

/// Parse `text` as JSON and validate it against `schema` (`None` = any
/// JSON object, as JSON mode promises).
pub fn parse(text: &str, schema: Option<&Value>, validators: &Validators, repair: bool) -> Parsed {
    let value = serde_json::from_str::<Value>(text.trim()).ok();
    let _ = repair;
    match value {
        None => Parsed {
            value: None,
            repairs: Vec::new(),
            violations: vec![Violation {
                pointer: String::new(),
                message: "answer is not valid JSON".to_string(),
            }],
        },
        Some(v) => {
            let violations = match schema {
                Some(s) => validators.validate(s, &v),
                None if !v.is_object() => vec![Violation {
                    pointer: String::new(),
                    message: "answer is not a JSON object".to_string(),
                }],
                None => Vec::new(),
            };
            Parsed {
                value: Some(v),
                repairs: Vec::new(),
                violations,
            }
        }
    }
}

/// The first few violations, as one line.
pub fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .take(5)
        .map(|v| {
            if v.pointer.is_empty() {
                v.message.clone()
            } else {
                format!("{}: {}", v.pointer, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The instruction sent with a retry.
pub fn feedback(violations: &[Violation], truncated: bool) -> String {
    if truncated {
        return "Your previous answer was cut off before it was complete. Answer again, more briefly, with complete JSON that matches the schema.".to_string();
    }
    format!(
        "Your previous answer was invalid: {}. Answer again with JSON that matches the schema.",
        describe(violations)
    )
}

/// Violations of one tool call's arguments against the tool's schema.
pub fn check_call(set: &crate::tools::ToolSet, call: &crate::tools::ToolCall) -> Vec<Violation> {
    crate::tools::validate_calls(std::slice::from_ref(call), set)
        .into_iter()
        .flatten()
        .map(|(pointer, message)| Violation { pointer, message })
        .collect()
}

/// Coerce one call's arguments to what its schema implies.
pub fn repair_call(set: &crate::tools::ToolSet, call: &mut crate::tools::ToolCall) -> Vec<String> {
    match set.get(&call.name) {
        Some(tool) => crate::tools::repair_arguments(&mut call.arguments, &tool.parameters)
            .into_iter()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    }
}
