//! The `loop-array`, `loop-string` and `loop-repeat` fault models: a small model that, under
//! a `format`, runs away inside the first list of values (an array of scalars, repeating its
//! item) or the first free string (repeating `"la "`, or `0` for `loop-repeat`), until the
//! token limit cuts it (`loop-repeat`: until Ollama's cut of a token repeated too often, see
//! [`cut_repeats`]). A `maxItems` /
//! `maxLength` on that part stops it: the model then fills the part up to the bound and
//! closes the JSON, as a grammar forces it to. Arrays of objects (a `tool_calls` list) get
//! `minItems` items, at least one; everything else is the deterministic instance of
//! [`crate::schema::instance`] (first `anyOf` branch, required properties only).

use serde_json::{Map, Value, json};

use crate::schema;

/// Tokens generated before the fake's context is full, when no `num_predict` says less.
pub const CONTEXT_TOKENS: usize = 1024;
/// Repeats written for an unbounded part: more than any limit lets through.
const ENDLESS: usize = 8192;
/// What an unbounded string repeats.
const BABBLE: &str = "la ";
/// What a `loop-repeat` string repeats: one token.
const DIGIT: &str = "0";
/// Ollama ends an answer once one token came more than this many times in a row.
const REPEAT_CUT: usize = 30;

/// Which kind of part runs away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Array,
    Text,
    /// A string repeating one token.
    Repeat,
}

impl Kind {
    /// The kind for a fault model's base name.
    pub fn of(model: &str) -> Option<Kind> {
        match model {
            "loop-array" => Some(Kind::Array),
            "loop-string" => Some(Kind::Text),
            "loop-repeat" => Some(Kind::Repeat),
            _ => None,
        }
    }
}

/// The answer text for `format` (`None` or `"json"`, shown as `Value::Null`: a bare
/// runaway of its kind). Unbounded, it is far longer than any token limit.
pub fn answer(format: Option<&Value>, kind: Kind) -> String {
    let schema = match format {
        Some(s @ Value::Object(_)) => s.clone(),
        _ => match kind {
            Kind::Array => json!({"type": "array", "items": {"type": "string"}}),
            Kind::Text | Kind::Repeat => json!({"type": "string"}),
        },
    };
    let mut looped = false;
    let mut out = String::new();
    write(&schema, kind, &mut looped, &mut out, 0);
    out
}

fn write(s: &Value, kind: Kind, looped: &mut bool, out: &mut String, depth: usize) {
    let Some(o) = s.as_object().filter(|_| depth < 32) else {
        out.push_str(&schema::instance(s).to_string());
        return;
    };
    if let Some(first) = o
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return write(first, kind, looped, out, depth + 1);
    }
    if o.contains_key("const") || o.contains_key("enum") {
        out.push_str(&schema::instance(s).to_string());
        return;
    }
    match o.get("type").and_then(Value::as_str) {
        Some("object") => object(o, kind, looped, out, depth),
        Some("array") => {
            let item = o.get("items").cloned().unwrap_or(json!({"type": "string"}));
            let scalar = matches!(
                item.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "number" | "boolean")
            );
            let runs = kind == Kind::Array && !*looped && scalar;
            let bound = o.get("maxItems").and_then(Value::as_u64);
            let min = o.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let n = match bound {
                Some(b) if runs => b as usize,
                None if runs => ENDLESS,
                _ => min.max(1) as usize,
            };
            *looped |= runs && bound.is_none();
            let mut text = String::new();
            write(&item, kind, looped, &mut text, depth + 1);
            out.push('[');
            out.push_str(&vec![text; n].join(","));
            out.push(']');
        }
        Some("string") if kind != Kind::Array && !*looped && o.get("format").is_none() => {
            let babble = if kind == Kind::Repeat { DIGIT } else { BABBLE };
            let bound = o.get("maxLength").and_then(Value::as_u64);
            *looped |= bound.is_none();
            let n = bound.map_or(ENDLESS * babble.len(), |b| b as usize);
            let text: String = babble.chars().cycle().take(n).collect();
            out.push_str(&Value::String(text).to_string());
        }
        _ => out.push_str(&schema::instance(s).to_string()),
    }
}

fn object(o: &Map<String, Value>, kind: Kind, looped: &mut bool, out: &mut String, depth: usize) {
    let props = o.get("properties").and_then(Value::as_object);
    out.push('{');
    let required = o
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (i, name) in required.filter_map(Value::as_str).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(name.to_owned()).to_string());
        out.push(':');
        let sub = props
            .and_then(|p| p.get(name))
            .cloned()
            .unwrap_or(json!({"type": "string"}));
        write(&sub, kind, looped, out, depth + 1);
    }
    out.push('}');
}

/// Ollama's end of an answer that repeats itself: once one piece came more than
/// [`REPEAT_CUT`] times in a row, the answer ends there, without a done chunk. `true` when
/// it cut.
pub fn cut_repeats(pieces: &mut Vec<crate::plan::Piece>) -> bool {
    let mut run = 0usize;
    for i in 1..pieces.len() {
        if pieces[i].text == pieces[i - 1].text {
            run += 1;
        } else {
            run = 0;
        }
        if run > REPEAT_CUT {
            pieces.truncate(i);
            return true;
        }
    }
    false
}
