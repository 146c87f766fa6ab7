//! Per-type keyword rules: which keywords survive for each primitive type and
//! in what shape (non-negative integer counts, integer bounds, anchored
//! patterns, supported formats), and `const` and bounded enums, which
//! decide the grammar on their own.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::formats::FormatForms;
use super::formats::pattern_for;
use super::formats_common;
use super::pattern::to_grammar_pattern;
use super::types::{any_value, common_type, is_any_value, type_of};
use super::walk::{Out, Walker, annotations};

/// Enums larger than this fall back to their base type.
pub(super) const MAX_ENUM: usize = 256;
/// Largest length/item count kept; GBNF refuses repetitions of 2000+.
pub(super) const MAX_COUNT: u64 = 1500;
/// String formats the converter has grammars for.
const FORMATS: [&str; 9] = [
    "date",
    "time",
    "date-time",
    "uuid",
    "uuid1",
    "uuid2",
    "uuid3",
    "uuid4",
    "uuid5",
];
/// Integer bounds beyond this are dropped (f64 precision, int64 grammar).
const MAX_BOUND: f64 = 9.0e15;

/// A usable enum, or why not plus the base type to fall back to.
fn enum_values(e: &Value, types: &[&str]) -> Result<Vec<Value>, (String, Option<&'static str>)> {
    let Some(values) = e.as_array() else {
        return Err(("not an array".into(), None));
    };
    if values.is_empty() {
        return Err(("empty".into(), None));
    }
    if values.len() > MAX_ENUM {
        return Err((format!("{} values", values.len()), common_type(values)));
    }
    if types.is_empty() {
        return Ok(values.clone());
    }
    let fits = |v: &Value| {
        let t = type_of(v);
        types.contains(&t) || (t == "integer" && types.contains(&"number"))
    };
    let kept: Vec<Value> = values.iter().filter(|v| fits(v)).cloned().collect();
    if kept.is_empty() {
        Ok(values.clone())
    } else {
        Ok(kept)
    }
}

/// A non-negative integer count no larger than [`MAX_COUNT`].
fn count(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return (n <= MAX_COUNT).then_some(n);
    }
    let f = v.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f <= MAX_COUNT as f64).then_some(f as u64)
}

fn finite(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
        .filter(|f| f.is_finite() && f.abs() <= MAX_BOUND)
}

impl Walker<'_> {
    /// `const`/`enum` decide the grammar on their own.
    pub(super) fn constant(
        &mut self,
        m: &mut Map<String, Value>,
        types: &[&str],
        path: &str,
    ) -> Option<Out> {
        if let Some(c) = m.get("const") {
            let mut out = annotations(m);
            out.insert("const".into(), c.clone());
            return Some(Out::Schema(Value::Object(out)));
        }
        let e = m.remove("enum")?;
        match enum_values(&e, types) {
            Ok(values) => {
                let mut out = annotations(m);
                out.insert("enum".into(), Value::Array(values));
                Some(Out::Schema(Value::Object(out)))
            }
            Err((why, base)) => {
                self.note(path, format!("dropped enum ({why})"));
                if types.is_empty()
                    && let Some(t) = base
                {
                    m.insert("type".into(), Value::String(t.into()));
                }
                None
            }
        }
    }

    /// Copy the keywords of `m` that type `ty` supports into `out`.
    pub(super) fn keywords(
        &mut self,
        ty: &str,
        m: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: usize,
    ) {
        match ty {
            "string" => self.string(m, out, path),
            "integer" => self.integer(m, out, path),
            "number" => self.number(m, out, path),
            "array" => self.array(m, out, path, depth),
            "object" => self.object_keywords(m, out, path, depth),
            _ => {}
        }
    }

    fn counts(
        &mut self,
        m: &Map<String, Value>,
        out: &mut Map<String, Value>,
        keys: [&str; 2],
        path: &str,
    ) {
        let mut got = [None, None];
        for (i, k) in keys.iter().enumerate() {
            if let Some(v) = m.get(*k) {
                got[i] = count(v);
                if got[i].is_none() {
                    self.note(path, format!("dropped {k} {v}"));
                }
            }
        }
        if let [Some(lo), Some(hi)] = got
            && lo > hi
        {
            self.note(path, format!("dropped {} > {}", keys[0], keys[1]));
            return;
        }
        for (i, k) in keys.iter().enumerate() {
            if let Some(n) = got[i] {
                out.insert((*k).into(), json!(n));
            }
        }
    }

    fn string(&mut self, m: &Map<String, Value>, out: &mut Map<String, Value>, path: &str) {
        if let Some(p) = m.get("pattern") {
            match p.as_str().map(to_grammar_pattern) {
                Some(Ok(g)) => {
                    if p.as_str() != Some(g.as_str()) {
                        self.note(path, format!("pattern {p} -> {g:?}"));
                    }
                    out.insert("pattern".into(), Value::String(g));
                }
                Some(Err(why)) => self.note(path, format!("dropped pattern {p} ({why})")),
                None => self.note(path, "dropped non-string pattern"),
            }
        }
        if let Some(f) = m.get("format") {
            match f.as_str() {
                Some(s) if FORMATS.contains(&s) => {
                    out.insert("format".into(), f.clone());
                }
                // A format the converter has no rule for stands as a
                // pattern, unless the schema has its own.
                Some(s)
                    if !out.contains_key("pattern")
                        && let Some(Ok(p)) = self.format_pattern(s).map(to_grammar_pattern) =>
                {
                    self.note(path, format!("format {f} -> pattern"));
                    out.insert("pattern".into(), Value::String(p));
                }
                _ => self.note(path, format!("dropped format {f}")),
            }
        }
        self.counts(m, out, ["minLength", "maxLength"], path);
    }

    /// The pattern standing for string format `s` in the grammar copy.
    fn format_pattern(&self, s: &str) -> Option<&'static str> {
        match self.forms {
            FormatForms::Common => formats_common::pattern_for(s).or_else(|| pattern_for(s)),
            FormatForms::Exact => pattern_for(s),
        }
    }

    fn integer(&mut self, m: &Map<String, Value>, out: &mut Map<String, Value>, path: &str) {
        let excl_flag = |k: &str| matches!(m.get(k), Some(Value::Bool(true)));
        let mut lo: Option<i64> = None;
        let mut hi: Option<i64> = None;
        if let Some(x) = finite(m.get("minimum")) {
            let b = if excl_flag("exclusiveMinimum") {
                x.floor() + 1.0
            } else {
                x.ceil()
            };
            lo = Some(b as i64);
        }
        if let Some(x) = finite(m.get("exclusiveMinimum")) {
            let b = (x.floor() + 1.0) as i64;
            lo = Some(lo.map_or(b, |l| l.max(b)));
        }
        if let Some(x) = finite(m.get("maximum")) {
            let b = if excl_flag("exclusiveMaximum") {
                x.ceil() - 1.0
            } else {
                x.floor()
            };
            hi = Some(b as i64);
        }
        if let Some(x) = finite(m.get("exclusiveMaximum")) {
            let b = (x.ceil() - 1.0) as i64;
            hi = Some(hi.map_or(b, |h| h.min(b)));
        }
        if let (Some(l), Some(h)) = (lo, hi)
            && l > h
        {
            self.note(path, "dropped integer bounds with minimum > maximum");
            return;
        }
        if let Some(l) = lo {
            out.insert("minimum".into(), json!(l));
        }
        if let Some(h) = hi {
            out.insert("maximum".into(), json!(h));
        }
        let keys = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
        if keys.iter().any(|k| m.get(*k) != out.get(*k)) {
            self.note(path, "integer bounds -> integer minimum/maximum");
        }
    }

    fn number(&mut self, m: &Map<String, Value>, out: &mut Map<String, Value>, path: &str) {
        for (bound, excl) in [
            ("minimum", "exclusiveMinimum"),
            ("maximum", "exclusiveMaximum"),
        ] {
            let b = m.get(bound).filter(|v| v.is_number());
            match m.get(excl) {
                Some(Value::Bool(true)) => {
                    if let Some(b) = b {
                        self.note(path, format!("{excl}: true -> {excl}: {b}"));
                        out.insert(excl.into(), b.clone());
                    }
                    continue;
                }
                Some(v) if v.is_number() => {
                    out.insert(excl.into(), v.clone());
                }
                Some(Value::Bool(false)) | None => {}
                Some(v) => self.note(path, format!("dropped {excl} {v}")),
            }
            if let Some(b) = b {
                out.insert(bound.into(), b.clone());
            } else if let Some(v) = m.get(bound) {
                self.note(path, format!("dropped {bound} {v}"));
            }
        }
        if let Some(v) = m.get("multipleOf") {
            if v.as_f64().is_some_and(|f| f > 0.0) {
                out.insert("multipleOf".into(), v.clone());
            } else {
                self.note(path, format!("dropped multipleOf {v}"));
            }
        }
    }

    fn array(
        &mut self,
        m: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: usize,
    ) {
        let tuple = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), items) => {
                self.note(path, "prefixItems -> fixed-length items tuple");
                if items.is_some_and(|i| !i.is_array()) {
                    self.note(path, "dropped items after prefixItems");
                }
                Some(p)
            }
            (_, Some(Value::Array(p))) => Some(p),
            _ => None,
        };
        if let Some(parts) = tuple {
            let mut items = Vec::with_capacity(parts.len());
            for (i, part) in parts.iter().enumerate() {
                let sub = format!("{path}/items/{i}");
                match self.child(part, &sub, depth) {
                    Out::Schema(v) => items.push(v),
                    Out::Never => {
                        self.note(&sub, "false tuple item -> any value");
                        items.push(any_value());
                    }
                }
            }
            out.insert("items".into(), Value::Array(items));
            return;
        }
        if let Some(items) = m.get("items") {
            match self.child(items, &format!("{path}/items"), depth) {
                Out::Never => {
                    self.note(path, "items false -> maxItems 0");
                    out.insert("maxItems".into(), json!(0));
                    return;
                }
                Out::Schema(v) if is_any_value(&v) => {}
                Out::Schema(v) => {
                    out.insert("items".into(), v);
                }
            }
        }
        self.counts(m, out, ["minItems", "maxItems"], path);
    }

    fn object_keywords(
        &mut self,
        m: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: usize,
    ) {
        let mut props = Map::new();
        let mut removed: HashSet<String> = HashSet::new();
        match m.get("properties") {
            Some(Value::Object(p)) => {
                for (name, ps) in p {
                    let sub = format!("{path}/properties/{}", escape_pointer(name));
                    match self.child(ps, &sub, depth) {
                        Out::Schema(v) => {
                            props.insert(name.clone(), v);
                        }
                        Out::Never => {
                            self.note(&sub, "removed property with schema false");
                            removed.insert(name.clone());
                        }
                    }
                }
            }
            Some(Value::Null) | None => {}
            Some(other) => self.note(path, format!("dropped non-object properties {other}")),
        }
        let mut required: Vec<Value> = Vec::new();
        let mut listed: HashSet<&str> = HashSet::new();
        if let Some(r) = m.get("required") {
            match r.as_array() {
                Some(names) => {
                    for n in names {
                        match n.as_str() {
                            Some(s) if removed.contains(s) => {}
                            Some(s) => {
                                if listed.insert(s) {
                                    required.push(n.clone());
                                }
                                if !props.contains_key(s) {
                                    self.note(path, format!("required {s:?} added to properties"));
                                    props.insert(s.to_string(), any_value());
                                }
                            }
                            None => self.note(path, format!("dropped required entry {n}")),
                        }
                    }
                }
                None => self.note(path, "dropped non-array required"),
            }
        }
        if self.forms == FormatForms::Common {
            non_empty_required(&mut props, &required);
        }
        if m.get("properties").is_some_and(Value::is_object) || !props.is_empty() {
            out.insert("properties".into(), Value::Object(props));
        }
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        if let Some(a) = m.get("additionalProperties") {
            match a {
                Value::Bool(_) => {
                    out.insert("additionalProperties".into(), a.clone());
                }
                Value::Object(_) => {
                    match self.child(a, &format!("{path}/additionalProperties"), depth) {
                        Out::Never => {
                            out.insert("additionalProperties".into(), Value::Bool(false));
                        }
                        Out::Schema(v) if is_any_value(&v) => {
                            out.insert("additionalProperties".into(), Value::Bool(true));
                        }
                        Out::Schema(v) => {
                            out.insert("additionalProperties".into(), v);
                        }
                    }
                }
                other => self.note(path, format!("dropped additionalProperties {other}")),
            }
        }
    }
}

/// Escape a property name for use in a JSON pointer.
pub(super) fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The common forms (`tools.small_model`): a required string property of
/// the grammar copy takes at least one character, unless its schema
/// already bounds it (`minLength`, `pattern`, `enum`, `const`). Left free,
/// a very small model closes the string at once (`{"city": ""}`); an
/// empty value for a required property is no value anyway, and
/// validation still applies the client's schema.
fn non_empty_required(props: &mut Map<String, Value>, required: &[Value]) {
    for name in required.iter().filter_map(Value::as_str) {
        let Some(Value::Object(p)) = props.get_mut(name) else {
            continue;
        };
        let bounded = ["minLength", "pattern", "enum", "const"]
            .iter()
            .any(|k| p.contains_key(*k));
        if p.get("type").and_then(Value::as_str) == Some("string") && !bounded {
            p.insert("minLength".into(), Value::from(1));
        }
    }
}
