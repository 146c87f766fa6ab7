//! Placeholder and template tokens copied into arguments instead of values.
//!
//! Small models copy what the instruction shows: given an example such as
//! `{"city":"<city>"}` they send `<city>` as the city. A string argument is
//! a placeholder when, trimmed, it is:
//! - a bracketed token whose word is the property's name (`<city>`,
//!   `<city name>`, `{city}`, `{{city}}`, `${city}`, `$city`, `[city]`, or
//!   an unclosed `<city`), a type name (`<string>`, `{number}`) or a
//!   placeholder word (`<value>`, `<your answer>`, `<tool name>`);
//! - the bare word `string` for a string property
//!   when the property is not about types (`type`, `kind`, `format`, …);
//! - the property's own name (`{"city":"city"}`,
//!   `{"tracking_number":"tracking number"}`);
//! - only an ellipsis (`…`, `...`);
//! - empty (or only spaces), for a property the schema requires: a call
//!   that needs a value and has none.
//!
//! Never a placeholder: a value the schema names (`enum`, `const`,
//! `default`, `examples`) or one the conversation itself contains (the
//! user may really mean `<city>`). Only strings are looked at: the grammar
//! already keeps other types well formed.

use serde_json::Value;

use super::args::Violation;
use super::call::ToolCall;
use super::spec::ToolSet;

/// Longest string considered (placeholders are short).
const MAX_LEN: usize = 64;
/// Deepest nesting looked at.
const MAX_DEPTH: usize = 8;
/// Most placeholders reported per call.
const MAX_FOUND: usize = 10;

/// Words that make a bracketed token a placeholder whatever the property.
const PLACEHOLDER_WORDS: &[&str] = &[
    "string",
    "str",
    "text",
    "number",
    "integer",
    "int",
    "float",
    "boolean",
    "bool",
    "value",
    "values",
    "placeholder",
    "your answer",
    "answer",
    "tool name",
    "name",
    "argument",
    "arguments",
    "param",
    "parameter",
    "input",
];

/// Property names whose values may legitimately be type names.
const TYPE_KEYS: &[&str] = &[
    "type",
    "types",
    "kind",
    "format",
    "dtype",
    "datatype",
    "data type",
    "schema",
    "field type",
    "value type",
    "return type",
];

/// Placeholders in `call`'s arguments as violations (pointer into the
/// arguments, message). `mentioned(s)` says whether the conversation
/// contains `s`; such values are taken as meant.
pub(crate) fn placeholder_violations(
    call: &ToolCall,
    set: &ToolSet,
    mentioned: &dyn Fn(&str) -> bool,
) -> Vec<Violation> {
    let schema = set.get(&call.name).map(|t| &t.parameters);
    let mut found = Vec::new();
    let at = Place {
        schema,
        key: "",
        required: false,
    };
    walk(&call.arguments, at, "", 0, mentioned, &mut found);
    found
}

/// Where a value sits: its schema, its property's name, and whether the
/// object holding it requires that property.
#[derive(Clone, Copy)]
struct Place<'a> {
    schema: Option<&'a Value>,
    key: &'a str,
    required: bool,
}

fn walk(
    v: &Value,
    at: Place<'_>,
    pointer: &str,
    depth: usize,
    mentioned: &dyn Fn(&str) -> bool,
    found: &mut Vec<Violation>,
) {
    if depth > MAX_DEPTH || found.len() >= MAX_FOUND {
        return;
    }
    let Place {
        schema,
        key,
        required,
    } = at;
    match v {
        Value::Object(m) => {
            let requires = |k: &str| {
                schema
                    .and_then(|s| s.get("required"))
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(k)))
            };
            for (k, x) in m {
                let sub = schema.and_then(|s| {
                    s.get("properties")
                        .and_then(|p| p.get(k))
                        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                });
                let at = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                let place = Place {
                    schema: sub,
                    key: k,
                    required: requires(k),
                };
                walk(x, place, &at, depth + 1, mentioned, found);
            }
        }
        Value::Array(items) => {
            let sub = schema.and_then(|s| s.get("items"));
            for (i, x) in items.iter().enumerate() {
                let place = Place {
                    schema: sub,
                    key,
                    required: false,
                };
                walk(
                    x,
                    place,
                    &format!("{pointer}/{i}"),
                    depth + 1,
                    mentioned,
                    found,
                );
            }
        }
        Value::String(s) if required && s.trim().is_empty() && !named_by(schema, s) => {
            found.push((
                pointer.to_string(),
                format!(
                    "{key:?} is required and the value is empty: use the actual value from \
                     the conversation, or answer instead of calling the tool"
                ),
            ));
        }
        Value::String(s)
            if is_placeholder(s, key, schema) && !named_by(schema, s) && !mentioned(s.trim()) =>
        {
            found.push((
                pointer.to_string(),
                format!(
                    "{s:?} is a placeholder, not a value: use the actual value from \
                     the conversation, or answer instead of calling the tool"
                ),
            ));
        }
        _ => {}
    }
}

/// Whether the schema lists `s` as a value (`enum`, `const`, `default`,
/// `examples`).
fn named_by(schema: Option<&Value>, s: &str) -> bool {
    let Some(Value::Object(m)) = schema else {
        return false;
    };
    let is = |v: &Value| v.as_str() == Some(s);
    ["enum", "examples"].iter().any(|k| {
        m.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(is))
    }) || ["const", "default"]
        .iter()
        .any(|k| m.get(*k).is_some_and(is))
}

/// Whether `value` (of property `key`, under `schema`) is a placeholder.
pub(crate) fn is_placeholder(value: &str, key: &str, schema: Option<&Value>) -> bool {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > MAX_LEN {
        return false;
    }
    if v.chars().all(|c| c == '.' || c == '…') {
        return true;
    }
    if let Some(word) = bracketed(v) {
        let word = words(word);
        let key = words(key);
        return PLACEHOLDER_WORDS.contains(&word.as_str())
            || word.starts_with("your ")
            || (!key.is_empty() && names_key(&word, &key));
    }
    let key = words(key);
    if !key.is_empty() && words(v) == key {
        return true;
    }
    !TYPE_KEYS.contains(&key.as_str())
        && !key.ends_with(" type")
        && declared_types(schema).contains(&words(v).as_str())
}

/// The word inside a template token: `<w>`, `<<w>>`, `<w`, `{w}`, `{{w}}`,
/// `${w}`, `$w`, `[w]`. The word must look like a name (letters, digits,
/// spaces, `_`, `-`, `.`), start with a letter and hold no other bracket.
fn bracketed(v: &str) -> Option<&str> {
    let pairs = [
        ("<<", ">>"),
        ("{{", "}}"),
        ("${", "}"),
        ("<", ">"),
        ("{", "}"),
        ("[", "]"),
    ];
    let inner = pairs
        .iter()
        .find_map(|(open, close)| v.strip_prefix(open)?.strip_suffix(close))
        .or_else(|| v.strip_prefix('<').filter(|r| !r.contains('>')))
        .or_else(|| v.strip_prefix('$'))?;
    let inner = inner.trim();
    let name_like = inner.chars().next().is_some_and(char::is_alphabetic)
        && inner
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.'));
    name_like.then_some(inner)
}

/// Lower-case words separated by single spaces (`_`, `-`, `.` and case
/// changes split words: `cityName` → `city name`).
fn words(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else {
            out.push(' ');
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a placeholder word refers to the property `key`: the same
/// words, one containing the other as whole words, or a plural.
fn names_key(word: &str, key: &str) -> bool {
    let contains = |a: &str, b: &str| format!(" {a} ").contains(&format!(" {b} "));
    word == key
        || contains(word, key)
        || contains(key, word)
        || word.strip_suffix('s') == Some(key)
        || key.strip_suffix('s') == Some(word)
}

/// The bare type names a value of `schema` could be mistaken for: only
/// `string`, as other names (`text`, `number`) are ordinary words.
fn declared_types(schema: Option<&Value>) -> Vec<&'static str> {
    let string = match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => t == "string" || t == "str",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string" || t == "str"),
        _ => false,
    };
    if string { vec!["string"] } else { Vec::new() }
}

#[cfg(test)]
#[path = "placeholder_tests.rs"]
mod tests;
