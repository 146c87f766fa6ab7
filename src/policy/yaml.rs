//! One policy file's text → a JSON value, within the bounds of
//! [`super::bounds`]: the nesting pre-scan runs first, and the value is
//! built with a budget of one value per byte of text (plus a little), so
//! YAML aliases cannot multiply a small file into a huge value.

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::{
    bounds::{MAX_DEPTH, SLACK_VALUES},
    error::PolicyError,
    nesting::{self, Refusal},
};

/// Parse one policy file. A text of only comments, blank lines and `---`
/// is `null` (a file with no settings).
pub(crate) fn parse(file: &str, text: &str) -> Result<Value, PolicyError> {
    let yaml_error = |message: String| PolicyError::Yaml {
        file: file.to_string(),
        message,
    };
    if text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#') || l == "---"
    }) {
        return Ok(Value::Null);
    }
    nesting::check(text, MAX_DEPTH).map_err(|r| match r {
        Refusal::TooDeep { line } => PolicyError::Limit {
            file: file.to_string(),
            message: format!("line {line}: nested deeper than {MAX_DEPTH} levels"),
        },
        Refusal::Syntax { line, what } => yaml_error(format!("line {line}: {what}")),
    })?;
    let budget = Cell::new(text.len() + SLACK_VALUES);
    Bounded { budget: &budget }
        .deserialize(yaml_serde::Deserializer::from_str(text))
        .map_err(|e| yaml_error(e.to_string()))
}

/// Builds a [`Value`], charging one unit of `budget` per value.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    budget: &'a Cell<usize>,
}

impl Bounded<'_> {
    fn charge<E: de::Error>(&self) -> Result<(), E> {
        match self.budget.get().checked_sub(1) {
            Some(left) => {
                self.budget.set(left);
                Ok(())
            }
            None => Err(E::custom(
                "aliases expand to more values than the file has bytes",
            )),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.charge()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.charge()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.charge()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.charge()?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.charge()?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.charge()?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.charge()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.charge()?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.charge()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(self)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
