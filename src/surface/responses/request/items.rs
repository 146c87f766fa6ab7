//! `input` items as Ollama's Go types decode them
//! (`unmarshalResponsesInputItem`, `unmarshalResponsesContent` and the
//! items' `UnmarshalJSON`): the shorthand `{"role", "content"}` message,
//! string or array content, and the error texts, which stop decoding at
//! the first one.

use serde_json::Value;

use crate::error::ProxyError;

use super::fields::{Fields, bad, value_error, value_error_text};
use crate::wire::go;

/// One `input` item.
pub(super) enum Item<'a> {
    Message {
        role: &'a str,
        content: Vec<Content<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        /// The string shorthand, or the text of the content items.
        output: String,
        /// The content items, when `output` was an array.
        items: Vec<Content<'a>>,
    },
    Reasoning {
        encrypted_content: &'a str,
    },
    /// History of a server-side search: nothing the model sees.
    WebSearchCall,
}

/// One content part of a message or a function call output.
pub(super) enum Content<'a> {
    /// `input_text` or `output_text`.
    Text(&'a str),
    Image {
        image_url: &'a str,
    },
    File,
}

/// `unmarshalResponsesInputItem`.
pub(super) fn item(raw: &Value) -> Result<Item<'_>, ProxyError> {
    let Value::Object(obj) = raw else {
        return Err(value_error(
            raw,
            "struct { Type string \"json:\\\"type\\\"\"; Role string \"json:\\\"role\\\"\" }",
        ));
    };
    let mut peek = Fields::new(obj, "", "");
    let kind = peek.str("type");
    let role = peek.str("role");
    if let Some(e) = peek.saved {
        return Err(e);
    }
    let kind = if kind.is_empty() && !role.is_empty() {
        "message"
    } else {
        kind
    };
    match kind {
        "message" => {
            let content = match obj.get("content") {
                None => Vec::new(),
                Some(Value::Null) => vec![Content::Text("")],
                Some(Value::String(s)) => vec![Content::Text(s)],
                Some(Value::Array(parts)) => {
                    let mut out = Vec::with_capacity(parts.len());
                    for (j, part) in parts.iter().enumerate() {
                        out.push(content(part).map_err(|e| bad(format!("content[{j}]: {e}")))?);
                    }
                    out
                }
                Some(v) => {
                    return Err(bad(format!(
                        "content must be a string or array: {}",
                        value_error_text(v, "[]json.RawMessage")
                    )));
                }
            };
            Ok(Item::Message { role, content })
        }
        "function_call" => {
            let mut f = Fields::new(obj, "ResponsesFunctionCall", "");
            f.str("id");
            let call_id = f.str("call_id");
            let name = f.str("name");
            let arguments = f.str("arguments");
            match f.saved {
                Some(e) => Err(e),
                None => Ok(Item::FunctionCall {
                    call_id,
                    name,
                    arguments,
                }),
            }
        }
        "function_call_output" => {
            let mut f = Fields::new(obj, "", "");
            let call_id = f.str("call_id");
            if let Some(e) = f.saved {
                return Err(e);
            }
            let (output, items) = match obj.get("output") {
                None | Some(Value::Null) => (String::new(), Vec::new()),
                Some(Value::String(s)) => (s.clone(), Vec::new()),
                Some(Value::Array(parts)) => {
                    let mut items = Vec::with_capacity(parts.len());
                    let mut text = String::new();
                    for (j, part) in parts.iter().enumerate() {
                        let c = content(part).map_err(|e| bad(format!("output[{j}]: {e}")))?;
                        if let Content::Text(t) = c {
                            text.push_str(t);
                        }
                        items.push(c);
                    }
                    (text, items)
                }
                Some(v) => {
                    return Err(bad(format!(
                        "output must be a string or array: {}",
                        value_error_text(v, "[]json.RawMessage")
                    )));
                }
            };
            Ok(Item::FunctionCallOutput {
                call_id,
                output,
                items,
            })
        }
        "reasoning" => {
            let mut f = Fields::new(obj, "ResponsesReasoningInput", "");
            f.str("id");
            if let Some(summary) = f.get("summary") {
                match summary {
                    Value::Array(parts) => {
                        for part in parts {
                            match part {
                                Value::Object(p) => {
                                    let mut pf =
                                        Fields::new(p, "ResponsesReasoningSummary", "summary.");
                                    pf.str("type");
                                    pf.str("text");
                                    f.saved = f.saved.take().or(pf.saved);
                                }
                                Value::Null => {}
                                other => {
                                    f.fail("summary", other, "openai.ResponsesReasoningSummary")
                                }
                            }
                        }
                    }
                    other => f.fail("summary", other, "[]openai.ResponsesReasoningSummary"),
                }
            }
            let encrypted_content = f.str("encrypted_content");
            match f.saved {
                Some(e) => Err(e),
                None => Ok(Item::Reasoning { encrypted_content }),
            }
        }
        "web_search_call" => Ok(Item::WebSearchCall),
        "" => Err(bad("input item missing required 'type' field".into())),
        other => Err(bad(format!(
            "unknown input item type: {}",
            go::quote(other)
        ))),
    }
}

/// `unmarshalResponsesContent`.
fn content(raw: &Value) -> Result<Content<'_>, ProxyError> {
    let Value::Object(obj) = raw else {
        return Err(value_error(
            raw,
            "struct { Type string \"json:\\\"type\\\"\" }",
        ));
    };
    let mut peek = Fields::new(obj, "", "");
    let kind = peek.str("type");
    if let Some(e) = peek.saved {
        return Err(e);
    }
    let (strukt, text_key) = match kind {
        "input_text" => ("ResponsesTextContent", "text"),
        "output_text" => ("ResponsesOutputTextContent", "text"),
        "input_image" => ("ResponsesImageContent", "image_url"),
        "input_file" => ("ResponsesFileContent", "file_data"),
        other => return Err(bad(format!("unknown content type: {other}"))),
    };
    let mut f = Fields::new(obj, strukt, "");
    let value = f.str(text_key);
    if kind == "input_image" {
        f.str("detail");
        f.str("file_id");
    } else if kind == "input_file" {
        for key in ["file_id", "file_url", "filename"] {
            f.str(key);
        }
    }
    if let Some(e) = f.saved {
        return Err(e);
    }
    Ok(match kind {
        "input_image" => Content::Image { image_url: value },
        "input_file" => Content::File,
        _ => Content::Text(value),
    })
}
