//! Schema-directed coercion of a parsed value: scalars the schema implies
//! (`"5"` → 5, `"true"` → true, 5 → `"5"`, a single value → `[value]`, a JSON
//! string holding the expected object/array), enum spelling, and removal of
//! keys the schema forbids. Values that already match are left alone, so
//! coercion is idempotent. Usable on tool-call arguments alone. The work is
//! bounded: at most [`MAX_STEPS`] sub-schemas applied and [`MAX_MATCHES`]
//! alternatives tried per call, whatever references and `anyOf`s nest.

use std::cell::Cell;

use serde_json::{Map, Value};

use crate::schema::{TypeName, map_type_name};

const MAX_DEPTH: usize = 32;
/// Sub-schemas applied per [`coerce_to_schema`] call, at most.
pub(crate) const MAX_STEPS: usize = 10_000;
/// Alternatives checked against a validator per call, at most.
pub(crate) const MAX_MATCHES: usize = 32;

/// Coerce `value` towards `schema` in place; returns the repairs applied
/// (`"coerced_types"`, `"dropped_keys"`), each at most once.
pub fn coerce_to_schema(value: &mut Value, schema: &Value) -> Vec<&'static str> {
    let steps = Cell::new(MAX_STEPS);
    let matches = Cell::new(MAX_MATCHES);
    let mut c = Coercer {
        root: schema,
        repairs: Vec::new(),
        steps: &steps,
        matches: &matches,
    };
    c.coerce(value, schema, 0);
    c.repairs
}

struct Coercer<'a> {
    root: &'a Value,
    repairs: Vec<&'static str>,
    /// What is left of the budgets, shared with sub-coercers.
    steps: &'a Cell<usize>,
    matches: &'a Cell<usize>,
}

impl Coercer<'_> {
    fn note(&mut self, r: &'static str) {
        if !self.repairs.contains(&r) {
            self.repairs.push(r);
        }
    }

    fn coerce(&mut self, v: &mut Value, s: &Value, depth: usize) {
        let Value::Object(sm) = s else {
            return;
        };
        if depth > MAX_DEPTH || self.steps.get() == 0 {
            return;
        }
        self.steps.set(self.steps.get() - 1);
        if let Some(target) = sm
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve(self.root, r))
        {
            self.coerce(v, target, depth + 1);
        }
        if let Some(Value::Array(parts)) = sm.get("allOf") {
            for p in parts {
                self.coerce(v, p, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(alts)) = sm.get(key) {
                self.alternatives(v, alts, depth);
            }
        }
        self.scalar(v, sm);
        match v {
            Value::Object(obj) => self.object(obj, sm, depth),
            Value::Array(xs) => self.array(xs, sm, depth),
            _ => {}
        }
    }

    /// Leave `v` alone if it matches a branch; else take the first branch
    /// that it can be coerced into.
    fn alternatives(&mut self, v: &mut Value, alts: &[Value], depth: usize) {
        if alts.iter().any(|a| self.matches(v, a)) {
            return;
        }
        for a in alts {
            let mut candidate = v.clone();
            let mut sub = Coercer {
                root: self.root,
                repairs: Vec::new(),
                steps: self.steps,
                matches: self.matches,
            };
            sub.coerce(&mut candidate, a, depth + 1);
            if self.matches(&candidate, a) {
                *v = candidate;
                for r in sub.repairs {
                    self.note(r);
                }
                return;
            }
        }
    }

    /// Whether `v` is valid against sub-schema `s` (with the root's
    /// definitions in scope). Uncompilable schemas, and any once the
    /// budget of checks is spent, match everything (so nothing changes).
    fn matches(&self, v: &Value, s: &Value) -> bool {
        if self.matches.get() == 0 {
            return true;
        }
        self.matches.set(self.matches.get() - 1);
        let mut s = s.clone();
        if let (Value::Object(sm), Value::Object(root)) = (&mut s, self.root) {
            for k in ["$defs", "definitions"] {
                if let Some(d) = root.get(k)
                    && !sm.contains_key(k)
                {
                    sm.insert(k.into(), d.clone());
                }
            }
        }
        super::cache::Validators::shared()
            .compile(&s)
            .map(|c| c.check(v).violations.is_empty())
            .unwrap_or(true)
    }

    fn scalar(&mut self, v: &mut Value, sm: &Map<String, Value>) {
        let types: Vec<&'static str> = match sm.get("type") {
            Some(Value::String(t)) => known(t).into_iter().collect(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .filter_map(known)
                .collect(),
            _ => Vec::new(),
        };
        if !types.is_empty()
            && !types.iter().any(|t| type_matches(v, t))
            && let Some(nv) = types.iter().find_map(|t| convert(v, t))
        {
            *v = nv;
            self.note("coerced_types");
        }
        if let (Some(Value::Array(values)), Value::String(s)) = (sm.get("enum"), &*v)
            && !values.contains(v)
        {
            let wanted = s.trim();
            let hit = values
                .iter()
                .find(|e| e.as_str().is_some_and(|e| e.eq_ignore_ascii_case(wanted)));
            if let Some(hit) = hit {
                *v = hit.clone();
                self.note("coerced_types");
            }
        }
    }

    fn object(&mut self, obj: &mut Map<String, Value>, sm: &Map<String, Value>, depth: usize) {
        let props = sm.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (k, ps) in props {
                if let Some(x) = obj.get_mut(k) {
                    self.coerce(x, ps, depth + 1);
                }
            }
        }
        let declared = |k: &str| props.is_some_and(|p| p.contains_key(k));
        match sm.get("additionalProperties") {
            Some(Value::Bool(false)) if !sm.contains_key("patternProperties") => {
                let before = obj.len();
                obj.retain(|k, _| declared(k));
                if obj.len() != before {
                    self.note("dropped_keys");
                }
            }
            Some(extra @ Value::Object(_)) => {
                for (k, x) in obj.iter_mut() {
                    if !declared(k) {
                        self.coerce(x, extra, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn array(&mut self, xs: &mut [Value], sm: &Map<String, Value>, depth: usize) {
        let tuple = match (sm.get("prefixItems"), sm.get("items")) {
            (Some(Value::Array(t)), _) | (None, Some(Value::Array(t))) => Some(t),
            _ => None,
        };
        if let Some(t) = tuple {
            for (x, s) in xs.iter_mut().zip(t) {
                self.coerce(x, s, depth + 1);
            }
            return;
        }
        if let Some(items) = sm.get("items").filter(|i| i.is_object()) {
            for x in xs.iter_mut() {
                self.coerce(x, items, depth + 1);
            }
        }
    }
}

fn known(t: &str) -> Option<&'static str> {
    match map_type_name(t) {
        TypeName::Known(k) => Some(k),
        _ => None,
    }
}

fn resolve<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let p = r.strip_prefix('#')?;
    if p.is_empty() {
        Some(root)
    } else {
        root.pointer(p)
    }
}

fn type_matches(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

/// `v` converted to type `t`, when there is an unambiguous conversion.
fn convert(v: &Value, t: &str) -> Option<Value> {
    match (t, v) {
        ("integer", Value::String(s)) => {
            let s = s.trim();
            if let Ok(i) = s.parse::<i64>() {
                return Some(Value::from(i));
            }
            let f: f64 = s.parse().ok()?;
            (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15).then(|| Value::from(f as i64))
        }
        ("number", Value::String(s)) => {
            let s = s.trim();
            if let Ok(i) = s.parse::<i64>() {
                return Some(Value::from(i));
            }
            let f: f64 = s.parse().ok()?;
            serde_json::Number::from_f64(f).map(Value::Number)
        }
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("null", Value::String(s)) if s.trim().eq_ignore_ascii_case("null") => Some(Value::Null),
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("object", Value::String(s)) => serde_json::from_str::<Value>(s.trim())
            .ok()
            .filter(Value::is_object),
        ("array", Value::String(s)) => {
            match serde_json::from_str::<Value>(s.trim())
                .ok()
                .filter(Value::is_array)
            {
                Some(a) => Some(a),
                None => Some(Value::Array(vec![v.clone()])),
            }
        }
        ("array", other) if !other.is_null() => Some(Value::Array(vec![other.clone()])),
        _ => None,
    }
}
