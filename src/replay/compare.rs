//! What `--check` compares: the status, the answer body with the values
//! that change on every run left out ([`VOLATILE`]), and the decisions
//! (the `X-Augur-*` headers but the upstream's name, and the `augur_*`
//! fields of the answer's chunks).

use serde_json::{Map, Value};

/// Fields whose values differ on every run (times, generated ids).
const VOLATILE: &[&str] = &[
    "id",
    "created",
    "created_at",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
];

/// Headers that name where an answer came from, not what was decided.
const NOT_DECISIONS: &[&str] = &["x-augur-upstream"];

/// One side of the comparison.
pub(super) struct Seen {
    pub status: u16,
    pub body: String,
    pub headers: Map<String, Value>,
    pub done: Map<String, Value>,
}

/// What differs between `recorded` and `now`: empty when they are the same.
pub(super) fn differences(recorded: &Seen, now: &Seen) -> Vec<String> {
    let mut out = Vec::new();
    if recorded.status != now.status {
        out.push(format!("status {} -> {}", recorded.status, now.status));
    }
    if normalized(&recorded.body) != normalized(&now.body) {
        out.push("answer body".into());
    }
    let decided = |m: &Map<String, Value>| -> Map<String, Value> {
        m.iter()
            .filter(|(k, _)| !NOT_DECISIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let changes = changed(&decided(&recorded.headers), &decided(&now.headers));
    let changes = changes
        .into_iter()
        .chain(changed(&recorded.done, &now.done));
    for c in changes {
        out.push(format!("decisions: {c}"));
    }
    out
}

/// `key: before -> after` for each key whose value differs.
fn changed(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<String> {
    let show = |v: Option<&Value>| match v {
        None => "(none)".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("{k}: {} -> {}", show(before.get(k)), show(after.get(k))))
        .collect()
}

/// The body's lines, each JSON one without its volatile fields.
fn normalized(body: &str) -> Vec<String> {
    body.lines()
        .map(|line| {
            let (prefix, json) = match line.strip_prefix("data: ") {
                Some(rest) => ("data: ", rest),
                None => ("", line),
            };
            match serde_json::from_str::<Value>(json) {
                Ok(mut v) => {
                    scrub(&mut v);
                    format!("{prefix}{v}")
                }
                Err(_) => line.to_string(),
            }
        })
        .collect()
}

fn scrub(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !VOLATILE.contains(&k.as_str()));
            map.values_mut().for_each(scrub);
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
