//! Stage 7's building blocks as the pipeline uses them: parse a model's
//! text as JSON (repairing when allowed), validate it, and phrase retry
//! feedback.

use serde_json::Value;

use crate::validate::{Validators, Violation};

use super::{job::Interp, screen::CallScreen};

/// A model answer parsed (and maybe repaired) and checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    /// The best JSON value found, if any.
    pub value: Option<Value>,
    /// What was repaired to get it.
    pub repairs: Vec<String>,
    /// Violations left (empty = valid, unless unchecked).
    pub violations: Vec<Violation>,
    /// Why the value could not be checked against the schema, if so.
    pub unchecked: Option<String>,
}

/// Parse `text` as JSON (repairing it when allowed) and validate it
/// against `schema` (`None` = any JSON object, as JSON mode promises).
pub(crate) fn parse(
    text: &str,
    schema: Option<&Value>,
    validators: &Validators,
    repair: bool,
) -> Parsed {
    let object = serde_json::json!({"type": "object"});
    let schema = schema.unwrap_or(&object);
    let outcome = crate::validate::parse_and_repair(text, Some(schema), validators, repair);
    Parsed {
        value: outcome.value,
        repairs: outcome.repairs.into_iter().map(str::to_string).collect(),
        violations: outcome.violations,
        unchecked: outcome.unchecked,
    }
}

/// The first few violations, as one line.
pub(crate) fn describe(violations: &[Violation]) -> String {
    crate::validate::format_violations(violations, 5)
}

/// Violations of one tool call's arguments against the tool's schema.
pub(crate) fn check_call(
    set: &crate::tools::ToolSet,
    call: &crate::tools::ToolCall,
) -> Vec<Violation> {
    crate::tools::validate_calls(std::slice::from_ref(call), set)
        .into_iter()
        .flatten()
        .map(|(pointer, message)| Violation { pointer, message })
        .collect()
}

/// One call checked against its tool's schema, repaired first when
/// `repair` allows and the repair lowers its violations: the call as it
/// stands, its violations, and the repairs kept.
pub(crate) fn checked_call(
    set: &crate::tools::ToolSet,
    call: crate::tools::ToolCall,
    repair: bool,
) -> (crate::tools::ToolCall, Vec<Violation>, Vec<String>) {
    let violations = check_call(set, &call);
    if violations.is_empty() || !repair {
        return (call, violations, Vec::new());
    }
    let mut candidate = call.clone();
    let repaired = repair_call(set, &mut candidate);
    let after = check_call(set, &candidate);
    if after.len() < violations.len() {
        (candidate, after, repaired)
    } else {
        (call, violations, Vec::new())
    }
}

/// Coerce one call's arguments to what its schema implies.
fn repair_call(set: &crate::tools::ToolSet, call: &mut crate::tools::ToolCall) -> Vec<String> {
    match set.get(&call.name) {
        Some(tool) => crate::tools::repair_arguments(&mut call.arguments, &tool.parameters)
            .into_iter()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    }
}

/// The complete calls at the start of a cut-off tool envelope: the
/// structure closed after the last complete call (an incomplete trailing
/// call is dropped, never guessed).
pub(crate) fn salvage_calls(
    text: &str,
    set: &crate::tools::ToolSet,
) -> Vec<crate::tools::ToolCall> {
    let mut extractor = crate::tools::StreamExtractor::new(set, false);
    let mut calls = Vec::new();
    for event in extractor.feed(text) {
        if let crate::tools::StreamEvent::Call(call) = event {
            calls.push(call);
        }
    }
    dedupe(calls)
}

/// Whether a native-tools model's `response` (a whole answer or a done
/// chunk) calls tools and says nothing else, where a JSON answer is
/// `expect`ed: a `format` governs the model's answer, not its calls, so
/// such an answer has nothing to validate and is taken as it is.
pub(crate) fn calls_only(response: &Value, text: &str, expect: &super::job::Expect) -> bool {
    use super::job::Expect;
    matches!(expect, Expect::Json | Expect::Schema(_))
        && text.trim().is_empty()
        && response
            .pointer("/message/tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| !calls.is_empty())
}

/// Drop exact repeats (same tool, same arguments) within one answer: small
/// models tend to repeat a call until the token limit.
pub(crate) fn dedupe(calls: Vec<crate::tools::ToolCall>) -> Vec<crate::tools::ToolCall> {
    let mut out: Vec<crate::tools::ToolCall> = Vec::with_capacity(calls.len());
    for call in calls {
        if !out.contains(&call) {
            out.push(call);
        }
    }
    out
}

/// Check (and repair) each call, exact repeats dropped; violations are
/// prefixed with the tool's name. When every call is one nobody asked for
/// (see [`CallScreen::is_unrelated`]), their
/// placeholders are not violations: the screen withholds those calls and
/// asks for an answer, which a retry to fill them in would only delay.
pub(crate) fn check_calls(
    interp: &mut Interp,
    calls: Vec<crate::tools::ToolCall>,
    set: &crate::tools::ToolSet,
    screen: &CallScreen,
    repair: bool,
) {
    let calls = dedupe(calls);
    let withheld = !calls.is_empty() && calls.iter().all(|c| screen.is_unrelated(set, c));
    for call in calls {
        interp.unchecked |= set.get(&call.name).is_some_and(|t| !t.exact());
        let (call, mut violations, repaired) = checked_call(set, call, repair);
        interp.repairs.extend(repaired);
        if !withheld {
            violations.extend(screen.violations(set, &call));
        }
        for v in violations {
            interp.violations.push(Violation {
                pointer: format!("{}{}", call.name, v.pointer),
                message: v.message,
            });
        }
        interp.calls.push(call);
    }
}
