//! Reading fields the way Go's `encoding/json` decodes them into Ollama's
//! structs: [`Fields`] keeps the first type error of a struct and goes
//! on, and the errors carry Go's texts (`json: cannot unmarshal …`).

use serde_json::{Map, Value};

use crate::{error::ProxyError, wire::json_kind};

/// A 400 with Ollama's text.
pub(super) fn bad(message: String) -> ProxyError {
    ProxyError::BadRequest(message)
}

/// `json.UnmarshalTypeError` for a struct field.
fn field_error(strukt: &str, path: &str, v: &Value, go_type: &str) -> ProxyError {
    bad(format!(
        "json: cannot unmarshal {} into Go struct field {strukt}.{path} of type {go_type}",
        json_kind(v)
    ))
}

/// `json.UnmarshalTypeError` for a value that is not a struct field.
pub(super) fn value_error(v: &Value, go_type: &str) -> ProxyError {
    bad(format!(
        "json: cannot unmarshal {} into Go value of type {go_type}",
        json_kind(v)
    ))
}

/// Field readers that keep the first type error and go on.
pub(super) struct Fields<'a> {
    obj: &'a Map<String, Value>,
    strukt: &'static str,
    prefix: &'static str,
    pub(super) saved: Option<ProxyError>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(
        obj: &'a Map<String, Value>,
        strukt: &'static str,
        prefix: &'static str,
    ) -> Self {
        Fields {
            obj,
            strukt,
            prefix,
            saved: None,
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn fail(&mut self, key: &str, v: &Value, go_type: &str) {
        if self.saved.is_none() {
            let path = format!("{}{key}", self.prefix);
            self.saved = Some(field_error(self.strukt, &path, v, go_type));
        }
    }

    pub(super) fn str(&mut self, key: &str) -> &'a str {
        match self.get(key) {
            None => "",
            Some(Value::String(s)) => s,
            Some(v) => {
                self.fail(key, v, "string");
                ""
            }
        }
    }

    pub(super) fn opt_str(&mut self, key: &str) -> Option<&'a str> {
        self.get(key)?;
        Some(self.str(key))
    }

    pub(super) fn opt_bool(&mut self, key: &str) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(b) => Some(*b),
            v => {
                self.fail(key, v, "bool");
                None
            }
        }
    }

    pub(super) fn opt_f64(&mut self, key: &str) -> Option<f64> {
        match self.get(key)? {
            Value::Number(n) => n.as_f64(),
            v => {
                self.fail(key, v, "float64");
                None
            }
        }
    }

    pub(super) fn opt_int(&mut self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Number(n) => match n.as_i64() {
                Some(i) => Some(i),
                None => {
                    if self.saved.is_none() {
                        self.saved = Some(bad(format!(
                            "json: cannot unmarshal number {n} into Go struct field {}.{}{key} of type int",
                            self.strukt, self.prefix
                        )));
                    }
                    None
                }
            },
            v => {
                self.fail(key, v, "int");
                None
            }
        }
    }

    pub(super) fn opt_object(
        &mut self,
        key: &str,
        go_type: &str,
    ) -> Option<&'a Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m),
            v => {
                self.fail(key, v, go_type);
                None
            }
        }
    }
}

/// [`value_error`]'s text.
pub(super) fn value_error_text(v: &Value, go_type: &str) -> String {
    value_error(v, go_type).to_string()
}
