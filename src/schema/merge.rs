//! Merging of schema objects, used to flatten `allOf` and to push the
//! siblings of an `anyOf` down into each branch (the converter dispatches on
//! `anyOf` first and would ignore them).

use std::collections::HashSet;

use serde_json::{Map, Value};

/// Merge `b` into `a` (both schema objects). Keywords present in both are
/// intersected where that is simple; otherwise `a` wins and the keyword name
/// is returned in the conflict list.
pub(super) fn merge_into(a: &mut Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    let mut conflicts = Vec::new();
    for (k, bv) in b {
        let Some(av) = a.get_mut(k) else {
            a.insert(k.clone(), bv.clone());
            continue;
        };
        if av == bv {
            continue;
        }
        match k.as_str() {
            "properties" => {
                if let (Value::Object(ap), Value::Object(bp)) = (&mut *av, bv) {
                    for (name, bs) in bp {
                        match ap.get_mut(name) {
                            None => {
                                ap.insert(name.clone(), bs.clone());
                            }
                            Some(Value::Object(asch)) => {
                                if let Value::Object(bsch) = bs {
                                    conflicts.extend(merge_into(asch, bsch));
                                }
                            }
                            Some(_) => {}
                        }
                    }
                } else {
                    conflicts.push(k.clone());
                }
            }
            "required" => {
                if let (Value::Array(ar), Value::Array(br)) = (&mut *av, bv) {
                    let mut have: HashSet<String> = ar.iter().map(Value::to_string).collect();
                    for name in br {
                        if have.insert(name.to_string()) {
                            ar.push(name.clone());
                        }
                    }
                }
            }
            "type" => match merge_types(av, bv) {
                Some(t) => *av = t,
                None => conflicts.push(k.clone()),
            },
            "enum" => {
                if let (Value::Array(ae), Value::Array(be)) = (&mut *av, bv) {
                    let in_b: HashSet<String> = be.iter().map(Value::to_string).collect();
                    let both: Vec<Value> = ae
                        .iter()
                        .filter(|v| in_b.contains(&v.to_string()))
                        .cloned()
                        .collect();
                    if both.is_empty() {
                        conflicts.push(k.clone());
                    } else {
                        *ae = both;
                    }
                }
            }
            "minimum" | "minLength" | "minItems" | "minProperties" | "exclusiveMinimum" => {
                if let (Some(x), Some(y)) = (av.as_f64(), bv.as_f64())
                    && y > x
                {
                    *av = bv.clone();
                }
            }
            "maximum" | "maxLength" | "maxItems" | "maxProperties" | "exclusiveMaximum" => {
                if let (Some(x), Some(y)) = (av.as_f64(), bv.as_f64())
                    && y < x
                {
                    *av = bv.clone();
                }
            }
            "additionalProperties" => {
                if *bv == Value::Bool(false) {
                    *av = Value::Bool(false);
                } else if *av == Value::Bool(true) {
                    *av = bv.clone();
                }
            }
            "description" | "title" | "default" | "examples" | "$comment" => {}
            _ => conflicts.push(k.clone()),
        }
    }
    conflicts
}

/// Intersect two `type` values (strings or arrays of strings).
fn merge_types(a: &Value, b: &Value) -> Option<Value> {
    let list = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(xs) => xs
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    let (mut la, mut lb) = (list(a), list(b));
    // Each name once: lists are then at most the seven JSON types plus
    // a few aliases, and the intersection below stays cheap.
    for l in [&mut la, &mut lb] {
        let mut seen = HashSet::new();
        l.retain(|t| seen.insert(t.clone()));
    }
    let lb: HashSet<&str> = lb.iter().map(String::as_str).collect();
    let mut out: Vec<String> = Vec::new();
    for t in &la {
        if lb.contains(t.as_str()) {
            out.push(t.clone());
        } else if (t == "integer" && lb.contains("number"))
            || (t == "number" && lb.contains("integer"))
        {
            out.push("integer".into());
        }
    }
    out.dedup();
    match out.len() {
        0 => None,
        1 => out.pop().map(Value::String),
        _ => Some(Value::Array(out.into_iter().map(Value::String).collect())),
    }
}
