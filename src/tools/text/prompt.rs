//! The instruction of text mode: the tools, as in grammar mode, and the
//! call form the model is asked to write in instead of the envelope JSON
//! (nothing constrains the answer, so the form is spelled out). As in
//! [`crate::tools::prompt::instruction`], the shape of a call shows types where
//! values go, never a value a small model could copy.

use super::format::TextFormat;
use super::render::shape_of;
use crate::tools::choice::ToolChoice;
use crate::tools::prompt;
use crate::tools::spec::ToolSet;

/// The instruction appended to the system prompt in text mode; tools
/// listed most relevant to `question` (the latest user message) first, as
/// in grammar mode.
pub(crate) fn instruction(
    set: &ToolSet,
    choice: &ToolChoice,
    parallel: bool,
    format: TextFormat,
    question: &str,
) -> String {
    let shown = prompt::shown_tools(set, choice, question);
    let Some(example) = shown.first() else {
        return String::new();
    };
    let mut out = String::from("You can call these tools:\n");
    for t in &shown {
        out.push_str("- ");
        out.push_str(&t.name);
        let desc = prompt::one_line(&t.description);
        if !desc.is_empty() {
            out.push_str(": ");
            out.push_str(&desc);
            if !desc.ends_with(['.', '!', '?', '…']) {
                out.push('.');
            }
        }
        out.push_str(" Parameters: ");
        out.push_str(&prompt::compact_schema(&t.parameters, 0).to_string());
        out.push('\n');
    }
    match choice {
        ToolChoice::Required => out.push_str("You must call a tool. "),
        ToolChoice::Named(n) => out.push_str(&format!("You must call {n}. ")),
        ToolChoice::Auto | ToolChoice::None => {}
    }
    out.push_str("To call a tool, reply with only ");
    out.push_str(match format {
        TextFormat::Python => "a Python list of calls with keyword arguments and literal values",
        TextFormat::ToolCode => {
            "a tool_code block of Python calls with keyword arguments and literal values"
        }
        TextFormat::ToolCall => "a <tool_call> block of JSON per call",
        TextFormat::ToolRequest => "a [TOOL_REQUEST] block of JSON per call",
    });
    out.push_str(if parallel {
        " (several calls at once if needed)."
    } else {
        " (one call)."
    });
    if choice.allows_answer() {
        out.push_str(" Otherwise answer in plain text.");
    }
    out.push_str("\nArgument values come from the conversation. Tool results come back as \"Tool result for ");
    out.push_str(&example.name);
    out.push_str(": …\".\nCall shape, with a value of each type where the type is: ");
    out.push_str(&shape_of(example, format));
    out
}
