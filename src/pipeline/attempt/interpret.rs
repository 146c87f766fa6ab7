//! Stage 7's reading of one answer: the model's text under what it is
//! expected to be ([`Expect`]): JSON checked against a schema, the tool
//! envelope (calls checked and repaired, or an answer), calls written as
//! text ([`super::text_mode`]), emulated thinking.

use serde_json::{Value, json};

use crate::{
    tools::{ModelOutput, ToolSet},
    validate::{Validators, Violation},
};

use super::{
    super::{
        checks::{self, check_calls},
        job::{Expect, Interp},
        screen::CallScreen,
    },
    text_mode,
};

/// Interpret a model's text under `expect`.
pub(crate) fn interpret(
    text: &str,
    expect: &Expect,
    validators: &Validators,
    repair: bool,
) -> Interp {
    match expect {
        Expect::Text => Interp {
            content: text.to_string(),
            ..Interp::default()
        },
        Expect::Json | Expect::Schema(_) => {
            let schema = match expect {
                Expect::Schema(s) => Some(s),
                _ => None,
            };
            let parsed = checks::parse(text, schema, validators, repair);
            let content = match (&parsed.value, parsed.repairs.is_empty()) {
                (Some(v), false) => v.to_string(),
                _ => text.to_string(),
            };
            Interp {
                content,
                violations: parsed.violations,
                repairs: parsed.repairs,
                unchecked: parsed.unchecked.is_some(),
                ..Interp::default()
            }
        }
        Expect::Tools {
            set,
            screen,
            text: Some(mode),
            ..
        } => text_mode::interpret_text_mode(text, set, screen, mode, repair),
        Expect::Tools {
            set,
            answer_schema,
            json_answer,
            think,
            screen,
            text: None,
        } => {
            let (thinking, envelope) = match think.then(|| split_thinking(text, repair, validators))
            {
                Some(Some((thinking, envelope))) => (Some(thinking), envelope),
                _ => (None, text.to_string()),
            };
            let mut interp = interpret_tools(
                &envelope,
                set,
                screen,
                answer_schema.as_ref(),
                *json_answer,
                validators,
                repair,
            );
            interp.thinking = thinking;
            interp
        }
        Expect::Think {
            answer_schema,
            json_answer,
        } => {
            let answer = answer_schema
                .clone()
                .or_else(|| json_answer.then(|| json!({"type": "object"})));
            let schema = crate::format::think::validation_schema(answer.as_ref());
            let parsed = checks::parse(text, Some(&schema), validators, repair);
            let mut interp = Interp {
                content: text.to_string(),
                violations: parsed.violations,
                repairs: parsed.repairs,
                unchecked: parsed.unchecked.is_some(),
                ..Interp::default()
            };
            if let Some((thinking, answer)) = parsed
                .value
                .as_ref()
                .and_then(crate::format::think::split_think)
            {
                interp.thinking = Some(thinking);
                interp.content = match answer {
                    Value::String(s) if answer_schema.is_none() && !json_answer => s,
                    other => other.to_string(),
                };
            }
            interp
        }
    }
}

/// The thinking and the answer's text of an emulated-thinking object.
fn split_thinking(text: &str, repair: bool, validators: &Validators) -> Option<(String, String)> {
    let value = match serde_json::from_str::<Value>(text.trim()) {
        Ok(v) => v,
        Err(_) if repair => crate::validate::parse_and_repair(text, None, validators, true).value?,
        Err(_) => return None,
    };
    let (thinking, answer) = crate::format::think::split_think(&value)?;
    Some((thinking, answer.to_string()))
}

fn interpret_tools(
    text: &str,
    set: &ToolSet,
    screen: &CallScreen,
    answer_schema: Option<&Value>,
    json_answer: bool,
    validators: &Validators,
    repair: bool,
) -> Interp {
    let mut interp = Interp::default();
    let output = match crate::tools::parse_output(text, set) {
        Ok(output) => output,
        Err(e) => {
            let salvaged = if repair {
                checks::salvage_calls(text, set)
            } else {
                Vec::new()
            };
            if salvaged.is_empty() {
                interp.violations.push(Violation {
                    pointer: String::new(),
                    message: e.to_string(),
                });
                interp.content = text.to_string();
                return interp;
            }
            interp.repairs.push("closed_truncated".to_string());
            ModelOutput::Calls(salvaged)
        }
    };
    match output {
        ModelOutput::Calls(calls) => check_calls(&mut interp, calls, set, screen, repair),
        ModelOutput::Answer(answer) => {
            if let Some(schema) = answer_schema {
                let checked = validators.validate(schema, &answer);
                interp.violations = checked.violations;
                interp.unchecked = checked.unchecked.is_some();
            }
            interp.content = match answer {
                Value::String(s) if answer_schema.is_none() && !json_answer => s,
                other => other.to_string(),
            };
        }
    }
    interp
}
