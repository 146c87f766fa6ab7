//! Tools a request declares that neither the model nor augur can run, left
//! out of it: OpenAI's hosted tools on `/v1/responses` (`web_search`,
//! `web_search_preview`, `file_search`, `code_interpreter`,
//! `image_generation`, `mcp`, `tool_search`, …, and the built-in client
//! tools with their own call items: `local_shell`, `shell`, `apply_patch`,
//! `computer_use_preview`, `custom`, …; Codex declares `web_search` with
//! every request), and Anthropic's server `web_search_*` tool on
//! `/v1/messages` (Claude Code declares it).
//!
//! augur emulates function tools only, and Ollama runs none of these but
//! web search (its own search loop, for a model with native tools). So a
//! web search sends the request to the upstream as it came when augur
//! does not emulate the model's tools (the pipeline decides:
//! [`crate::pipeline::Exchange::upstream_runs_tools`]); otherwise every
//! such tool is left out (the answer says which in
//! `X-Augur-Dropped-Tools`, and a debug line is logged) rather than
//! failing the request.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::adapter::Amended;
use crate::{error::ProxyError, pipeline::output::Output};

/// The header naming the tool types augur left out.
const DROPPED_TOOLS: HeaderName = HeaderName::from_static("x-augur-dropped-tools");

/// The tools left out of one request.
pub(crate) struct Dropped {
    /// `X-Augur-Dropped-Tools`: their types, comma-separated.
    header: HeaderValue,
    /// The client's body without them, for when the pipeline has nothing
    /// else to change and forwards the request.
    body: Bytes,
}

impl Dropped {
    /// The tools of `types` (not empty) left out of the client's `body`:
    /// those whose `type` is `dropped`.
    pub(super) fn new(
        types: &[String],
        body: &Map<String, Value>,
        dropped: fn(&str) -> bool,
    ) -> Result<Self, ProxyError> {
        tracing::debug!(
            tools = %types.join(", "),
            "tools the model cannot run and the upstream would not are left out"
        );
        let mut body = body.clone();
        if let Some(Value::Array(tools)) = body.get_mut("tools") {
            tools.retain(|t| !t.get("type").and_then(Value::as_str).is_some_and(dropped));
        }
        let body = serde_json::to_vec(&Value::Object(body))
            .map_err(|e| ProxyError::Internal(format!("re-encoding the request body: {e}")))?;
        Ok(Self {
            header: header_value(types),
            body: Bytes::from(body),
        })
    }

    /// Say in `out`'s headers what was left out.
    pub(super) fn mark(&self, out: &mut Output) {
        let (Output::Full { headers, .. } | Output::Stream { headers, .. }) = out;
        headers.insert(DROPPED_TOOLS, self.header.clone());
    }

    /// The request to forward in place of the client's own bytes.
    pub(super) fn amended(&self) -> Amended {
        let mut headers = HeaderMap::new();
        headers.insert(DROPPED_TOOLS, self.header.clone());
        Amended {
            body: self.body.clone(),
            headers,
        }
    }
}

/// The types as a header value: each cut to 64 characters, and any
/// character but a letter, a digit, `_`, `-` or `.` written as `_`.
fn header_value(types: &[String]) -> HeaderValue {
    let clean: Vec<String> = types
        .iter()
        .map(|t| {
            t.chars()
                .take(64)
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    HeaderValue::from_str(&clean.join(", ")).unwrap_or(HeaderValue::from_static("_"))
}

#[cfg(test)]
#[path = "dropped_tests.rs"]
mod tests;
