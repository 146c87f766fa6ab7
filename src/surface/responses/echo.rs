//! The `response` object: its fixed fields and the request fields it
//! echoes, in the two spellings Ollama writes — a Go struct for a whole
//! answer (`ToResponse`: fields in declaration order, empty optionals
//! left out) and a `map[string]any` in stream events
//! (`buildResponseObject`: keys sorted, absent optionals as `null`).
//!
//! Where Ollama writes constants augur echoes the request: augur honors
//! `tool_choice` and `parallel_tool_calls`, so the object says what was
//! applied (`"auto"` and `true` when the request leaves them out, as
//! Ollama always says).

use serde_json::{Map, Value, json};

use crate::wire::go;

/// The request fields a response object echoes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Echo {
    pub instructions: String,
    pub truncation: Option<String>,
    /// The request's `tools`, as sent.
    pub tools: Vec<Value>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    /// `text.format`, as sent.
    pub text_format: Option<Map<String, Value>>,
    pub effort: String,
    pub summary: String,
    pub top_p: Option<f64>,
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<i64>,
    pub background: bool,
}

/// What differs between two response objects of one request.
pub(crate) struct State<'a> {
    pub id: &'a str,
    pub model: &'a str,
    pub status: &'a str,
    pub created_at: i64,
    pub completed_at: Option<i64>,
    pub output: Vec<Value>,
    pub usage: Option<Value>,
}

fn str_field<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Token counts: `{input_tokens, output_tokens, total_tokens, …}`.
pub(super) fn usage(input: u64, output: u64, sorted: bool) -> Value {
    let pairs = vec![
        ("input_tokens", json!(input)),
        ("output_tokens", json!(output)),
        ("total_tokens", json!(input.saturating_add(output))),
        ("input_tokens_details", json!({"cached_tokens": 0})),
        ("output_tokens_details", json!({"reasoning_tokens": 0})),
    ];
    if sorted {
        go::sorted(pairs)
    } else {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl Echo {
    fn instructions(&self) -> Value {
        if self.instructions.is_empty() {
            Value::Null
        } else {
            json!(self.instructions)
        }
    }

    fn truncation(&self) -> Value {
        json!(self.truncation.as_deref().unwrap_or("disabled"))
    }

    fn tool_choice(&self) -> Value {
        self.tool_choice.clone().unwrap_or_else(|| json!("auto"))
    }

    fn parallel_tool_calls(&self) -> Value {
        json!(self.parallel_tool_calls.unwrap_or(true))
    }

    /// One declared tool as `ResponsesTool` writes it (whole answers keep
    /// a namespace's members) or as the stream's map does.
    fn tool(t: &Value, whole: bool) -> Value {
        let empty = Map::new();
        let t = t.as_object().unwrap_or(&empty);
        let nullable = |key: &str, ok: fn(&Value) -> bool| {
            t.get(key).filter(|v| ok(v)).cloned().unwrap_or(Value::Null)
        };
        let parameters = t
            .get("parameters")
            .filter(|p| p.is_object())
            .map_or(Value::Null, go::sorted_deep);
        let mut pairs = vec![
            ("type", json!(str_field(t, "type"))),
            ("name", json!(str_field(t, "name"))),
            ("description", nullable("description", Value::is_string)),
            ("strict", nullable("strict", Value::is_boolean)),
            ("parameters", parameters),
        ];
        if !whole {
            return go::sorted(pairs);
        }
        let members: Vec<Value> = t
            .get("tools")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|m| m.is_object())
                    .map(|m| Self::tool(m, true))
                    .collect()
            })
            .unwrap_or_default();
        if !members.is_empty() {
            pairs.push(("tools", Value::Array(members)));
        }
        Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    fn tools(&self, whole: bool) -> Value {
        Value::Array(self.tools.iter().map(|t| Self::tool(t, whole)).collect())
    }

    /// `{"format": …}`; `{"type":"text"}` when the request gives none.
    fn text(&self, whole: bool) -> Value {
        let Some(f) = &self.text_format else {
            return json!({"format": {"type": "text"}});
        };
        let mut pairs = vec![("type", json!(str_field(f, "type")))];
        if let Some(name) = f
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            pairs.push(("name", json!(name)));
        }
        if let Some(schema) = f.get("schema") {
            pairs.push(("schema", schema.clone()));
        }
        if let Some(strict) = f.get("strict").filter(|s| s.is_boolean()) {
            pairs.push(("strict", strict.clone()));
        }
        let format = if whole {
            Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
        } else {
            go::sorted(pairs)
        };
        json!({ "format": format })
    }

    fn reasoning(&self, whole: bool) -> Value {
        if self.effort.is_empty() && self.summary.is_empty() {
            return Value::Null;
        }
        let field = |s: &str| (!s.is_empty()).then(|| json!(s));
        let (effort, summary) = (field(&self.effort), field(&self.summary));
        if whole {
            let mut m = Map::new();
            if let Some(e) = effort {
                m.insert("effort".into(), e);
            }
            if let Some(s) = summary {
                m.insert("summary".into(), s);
            }
            Value::Object(m)
        } else {
            json!({
                "effort": effort.unwrap_or(Value::Null),
                "summary": summary.unwrap_or(Value::Null),
            })
        }
    }

    /// The object pairs, in `ResponsesResponse`'s field order.
    fn pairs(&self, s: State<'_>, whole: bool) -> Vec<(&'static str, Value)> {
        vec![
            ("id", json!(s.id)),
            ("object", json!("response")),
            ("created_at", json!(s.created_at)),
            (
                "completed_at",
                s.completed_at.map_or(Value::Null, Value::from),
            ),
            ("status", json!(s.status)),
            ("incomplete_details", Value::Null),
            ("model", json!(s.model)),
            ("previous_response_id", Value::Null),
            ("instructions", self.instructions()),
            ("output", Value::Array(s.output)),
            ("error", Value::Null),
            ("tools", self.tools(whole)),
            ("tool_choice", self.tool_choice()),
            ("truncation", self.truncation()),
            ("parallel_tool_calls", self.parallel_tool_calls()),
            ("text", self.text(whole)),
            ("top_p", go::float(self.top_p.unwrap_or(1.0))),
            ("presence_penalty", json!(0)),
            ("frequency_penalty", json!(0)),
            ("top_logprobs", json!(0)),
            ("temperature", go::float(self.temperature.unwrap_or(1.0))),
            ("reasoning", self.reasoning(whole)),
            ("usage", s.usage.unwrap_or(Value::Null)),
            (
                "max_output_tokens",
                self.max_output_tokens.map_or(Value::Null, Value::from),
            ),
            ("max_tool_calls", Value::Null),
            ("store", json!(false)),
            ("background", json!(self.background)),
            ("service_tier", json!("default")),
            ("metadata", json!({})),
            ("safety_identifier", Value::Null),
            ("prompt_cache_key", Value::Null),
        ]
    }

    /// The response object of a whole answer (`ToResponse`).
    pub(crate) fn whole(&self, s: State<'_>) -> Value {
        let pairs = self.pairs(s, true);
        Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The response object of a stream event (`buildResponseObject`).
    pub(crate) fn streamed(&self, s: State<'_>) -> Value {
        go::sorted(self.pairs(s, false))
    }
}
