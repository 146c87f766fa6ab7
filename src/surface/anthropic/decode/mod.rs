//! The errors Go's `encoding/json` gives when Ollama decodes a mistyped
//! `MessagesRequest` (`c.ShouldBindJSON`, answered as a 400), and when
//! `convertTool` decodes an `input_schema` into `api.ToolFunctionParameters`.
//!
//! Go keeps decoding after a field of the wrong type and reports the first
//! one; an error from a custom `UnmarshalJSON` (messages, tool arguments,
//! tool properties) stops decoding and wins. An error inside a custom
//! decoder is renamed by the decoder around it: the outer struct, the
//! field path from the outer root.
//!
//! Not modelled: Go matches field names case-insensitively ("Model" sets
//! `model`); here only exact names are checked and read.

use std::fmt;

use serde_json::{Map, Value};

use crate::wire::json_kind;

mod types;

use types::*;

/// A decoding failure, worded as Go words it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum GoError {
    /// `*json.UnmarshalTypeError`.
    Type {
        value: String,
        ty: &'static str,
        strukt: &'static str,
        field: String,
    },
    /// Any other error (a syntax error, a custom decoder's own).
    Other(&'static str),
}

impl GoError {
    fn mismatch(value: &Value, ty: &'static str) -> Self {
        GoError::Type {
            value: json_kind(value).to_string(),
            ty,
            strukt: "",
            field: String::new(),
        }
    }

    /// The error as the decoder around a custom decoder reports it.
    fn within(self, strukt: &'static str, path: &[&'static str]) -> Self {
        match self {
            GoError::Type {
                value, ty, field, ..
            } if !strukt.is_empty() || !path.is_empty() => {
                let mut parts: Vec<&str> = path.to_vec();
                if !field.is_empty() {
                    parts.push(&field);
                }
                GoError::Type {
                    value,
                    ty,
                    strukt,
                    field: parts.join("."),
                }
            }
            other => other,
        }
    }
}

impl fmt::Display for GoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoError::Type {
                value,
                ty,
                strukt,
                field,
            } if strukt.is_empty() && field.is_empty() => {
                write!(
                    f,
                    "json: cannot unmarshal {value} into Go value of type {ty}"
                )
            }
            GoError::Type {
                value,
                ty,
                strukt,
                field,
            } => write!(
                f,
                "json: cannot unmarshal {value} into Go struct field {strukt}.{field} of type {ty}"
            ),
            GoError::Other(message) => f.write_str(message),
        }
    }
}

/// The error `c.ShouldBindJSON(&MessagesRequest)` gives `req`, if any.
pub(super) fn request(req: &Map<String, Value>) -> Result<(), GoError> {
    let mut d = Decoder::default();
    d.fields(req, &REQUEST, &mut Vec::new())?;
    d.finish()
}

/// The error `json.Unmarshal(input_schema, &api.ToolFunctionParameters{})`
/// gives, if any.
pub(super) fn tool_schema(schema: &Value) -> Result<(), GoError> {
    root(schema, Ty::Struct(&TOOL_PARAMS))
}

/// Whether a content block (a `system` entry) decodes into a
/// `ContentBlock` without error.
pub(super) fn is_content_block(v: &Value) -> bool {
    root(v, BLOCK).is_ok()
}

/// One `json.Unmarshal` call: a stopping error, else the first type error.
fn root(v: &Value, ty: Ty) -> Result<(), GoError> {
    let mut d = Decoder::default();
    d.value(v, ty, "", &mut Vec::new())?;
    d.finish()
}

#[derive(Default)]
struct Decoder {
    saved: Option<GoError>,
}

impl Decoder {
    fn finish(self) -> Result<(), GoError> {
        self.saved.map_or(Ok(()), Err)
    }

    fn save(&mut self, value: String, ty: Ty, strukt: &'static str, path: &[&'static str]) {
        if self.saved.is_none() {
            self.saved = Some(GoError::Type {
                value,
                ty: ty.go_name(),
                strukt,
                field: path.join("."),
            });
        }
    }

    fn fields(
        &mut self,
        map: &Map<String, Value>,
        s: &'static Fields,
        path: &mut Vec<&'static str>,
    ) -> Result<(), GoError> {
        for (key, val) in map {
            if let Some((name, ty)) = s.fields.iter().find(|(n, _)| n == key) {
                path.push(name);
                let r = self.value(val, *ty, s.name, path);
                path.pop();
                r?;
            }
        }
        Ok(())
    }

    fn value(
        &mut self,
        v: &Value,
        ty: Ty,
        strukt: &'static str,
        path: &mut Vec<&'static str>,
    ) -> Result<(), GoError> {
        match (ty, v) {
            (Ty::Message, _) => message(v).map_err(|e| e.within(strukt, path)),
            (Ty::Args, Value::Null | Value::Object(_)) | (Ty::Props, Value::Null) => Ok(()),
            (Ty::Props, Value::Object(props)) => {
                for prop in props.values() {
                    root(prop, TOOL_PROPERTY).map_err(|e| e.within(strukt, path))?;
                }
                Ok(())
            }
            (Ty::Args | Ty::Props, _) => Err(GoError::Other(MALFORMED_OBJECT)),
            (Ty::PropType, _) => prop_type(v).map_err(|e| e.within(strukt, path)),
            (_, Value::Null) | (Ty::Any, _) => Ok(()),
            (Ty::Str, Value::String(_))
            | (Ty::Bool, Value::Bool(_))
            | (Ty::F64, Value::Number(_)) => Ok(()),
            (Ty::Int, Value::Number(n)) => {
                if n.as_i64().is_none() {
                    self.save(format!("number {n}"), ty, strukt, path);
                }
                Ok(())
            }
            (Ty::Slice(elem, _), Value::Array(items)) => {
                for item in items {
                    self.value(item, *elem, strukt, path)?;
                }
                Ok(())
            }
            (Ty::Struct(s), Value::Object(map)) => self.fields(map, s, path),
            (_, other) => {
                self.save(json_kind(other).to_string(), ty, strukt, path);
                Ok(())
            }
        }
    }
}

/// `MessageParam.UnmarshalJSON`: the role and raw content first, then the
/// content as a string, else as a list of blocks.
fn message(v: &Value) -> Result<(), GoError> {
    let empty = Map::new();
    let obj = match v {
        Value::Null => &empty,
        Value::Object(o) => o,
        other => return Err(GoError::mismatch(other, RAW_MESSAGE)),
    };
    if let Some(role) = obj.get("role")
        && !matches!(role, Value::String(_) | Value::Null)
    {
        return Err(GoError::Type {
            value: json_kind(role).to_string(),
            ty: "string",
            strukt: "",
            field: "role".into(),
        });
    }
    match obj.get("content") {
        None => Err(GoError::Other("unexpected end of JSON input")),
        Some(Value::Null | Value::String(_)) => Ok(()),
        Some(blocks @ Value::Array(_)) => {
            root(blocks, Ty::Slice(&BLOCK, "[]anthropic.ContentBlock"))
        }
        Some(other) => Err(GoError::mismatch(other, "[]anthropic.ContentBlock")),
    }
}

/// `PropertyType.UnmarshalJSON`: a string, else a list of strings.
fn prop_type(v: &Value) -> Result<(), GoError> {
    match v {
        Value::Null | Value::String(_) => Ok(()),
        Value::Array(items) => items
            .iter()
            .find(|i| !matches!(i, Value::Null | Value::String(_)))
            .map_or(Ok(()), |bad| Err(GoError::mismatch(bad, "string"))),
        other => Err(GoError::mismatch(other, "[]string")),
    }
}

#[cfg(test)]
mod tests;
