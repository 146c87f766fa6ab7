//! The retry of a lost native answer (no calls, no content, tokens
//! generated: Ollama's parser ate the call): asked once more under tool
//! emulation, the schema-constrained envelope the model cannot lose a
//! call in; its calls or answer come back in the native shape. Tools
//! whose schemas the envelope cannot hold are asked again as they were.

use serde_json::{Map, Value};

use crate::{
    error::ProxyError,
    tools::{self, ModelOutput, ToolChoice, ToolSet},
};

use super::super::{
    checks,
    job::{Job, answer_text},
};

/// The answer of the retry, in the native shape; `None` when the
/// emulated answer could not be read.
pub(crate) async fn recover(
    job: &Job,
    set: &ToolSet,
    body: &Map<String, Value>,
) -> Result<Option<Value>, ProxyError> {
    if set.invalid_schema().is_some() {
        let plain = job
            .ctx
            .json(job.route.path(), &Value::Object(body.clone()))
            .await?;
        return Ok(Some(plain));
    }
    let emulated = emulated_body(set, body);
    let mut response = job
        .ctx
        .json(job.route.path(), &Value::Object(emulated))
        .await?;
    let text = answer_text(job.route, &response);
    let output = match tools::parse_output(&text, set) {
        Ok(output) => output,
        Err(e) => {
            tracing::info!(error = %e, "the emulated retry of a lost answer could not be read");
            return Ok(None);
        }
    };
    let Some(Value::Object(message)) = response.get_mut("message") else {
        return Ok(None);
    };
    match output {
        ModelOutput::Calls(calls) => {
            // A model that repeats a call until the token limit: each
            // call once, as the emulated path answers.
            let calls = checks::dedupe(calls);
            message.insert("content".into(), Value::String(String::new()));
            message.insert("tool_calls".into(), tools::ollama_tool_calls(&calls, 0));
        }
        ModelOutput::Answer(answer) => {
            let content = tools::answer_content(&answer, false);
            message.insert("content".into(), Value::String(content));
        }
    }
    Ok(Some(response))
}

/// `body` under tool emulation: no native tools, the envelope as the
/// format, the tool instruction in the messages.
fn emulated_body(set: &ToolSet, body: &Map<String, Value>) -> Map<String, Value> {
    let mut out = body.clone();
    for key in ["tools", "tool_choice", "parallel_tool_calls", "think"] {
        out.remove(key);
    }
    let choice = ToolChoice::Auto;
    out.insert(
        "format".into(),
        tools::build_format(set, &choice, true, None),
    );
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let question = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let instruction = tools::instruction(set, &choice, true, question);
    out.insert(
        "messages".into(),
        Value::Array(tools::rewrite_messages(&messages, &instruction, true)),
    );
    out
}
