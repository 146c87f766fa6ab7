//! Native tool calls checked like emulated ones: each call's arguments
//! against its declared tool's schema, repaired deterministically first
//! (the coercions the schema implies, forbidden keys dropped); a call to
//! an undeclared tool is invalid, and the feedback of a retry names the
//! declared tools closest to it.

use serde_json::{Map, Value};

use crate::{
    tools::{ToolCall, ToolSet},
    validate::Violation,
};

use super::super::checks;

/// How many close names the feedback of an undeclared call lists.
const CLOSEST: usize = 3;

/// A native answer's calls, checked (and repaired when allowed).
#[derive(Debug, Clone, Default)]
pub(crate) struct Verdict {
    /// The calls, repaired where a repair helped.
    pub calls: Vec<ToolCall>,
    /// Per call, the violations left (empty = valid).
    pub violations: Vec<Vec<Violation>>,
    /// The repairs made.
    pub repairs: Vec<String>,
}

impl Verdict {
    /// Every call is valid.
    pub(crate) fn is_valid(&self) -> bool {
        self.violations.iter().all(Vec::is_empty)
    }

    /// How many violations are left (to keep the best attempt).
    pub(crate) fn count(&self) -> usize {
        self.violations.iter().map(Vec::len).sum()
    }

    /// The first invalid call and its violations, as one line.
    pub(crate) fn first_invalid(&self) -> Option<(&str, String)> {
        self.calls
            .iter()
            .zip(&self.violations)
            .find(|(_, v)| !v.is_empty())
            .map(|(c, v)| (c.name.as_str(), checks::describe(v)))
    }
}

/// The calls of a chat answer's `message.tool_calls` (`None` without any).
pub(crate) fn calls_of(message: &Map<String, Value>) -> Option<Vec<ToolCall>> {
    let list = message
        .get("tool_calls")?
        .as_array()
        .filter(|l| !l.is_empty())?;
    let calls = list
        .iter()
        .map(|c| {
            let f = c.get("function").unwrap_or(c);
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => Value::Object(Map::new()),
            };
            ToolCall {
                name: name.to_string(),
                arguments,
            }
        })
        .collect();
    Some(calls)
}

/// Check `calls` against `set`; with `repair`, each invalid call is
/// repaired when that leaves fewer violations.
pub(crate) fn check(set: &ToolSet, calls: Vec<ToolCall>, repair: bool) -> Verdict {
    let mut verdict = Verdict::default();
    for call in calls {
        let (call, violations, repaired) = checks::checked_call(set, call, repair);
        verdict.repairs.extend(repaired);
        verdict.calls.push(call);
        verdict.violations.push(violations);
    }
    verdict
}

/// Write the verdict's (repaired) arguments into `message.tool_calls`,
/// keeping every other field of each call as the model sent it.
pub(crate) fn write_back(message: &mut Map<String, Value>, verdict: &Verdict) {
    let Some(Value::Array(list)) = message.get_mut("tool_calls") else {
        return;
    };
    for (entry, call) in list.iter_mut().zip(&verdict.calls) {
        let target = match entry.get_mut("function") {
            Some(Value::Object(f)) => f,
            _ => match entry {
                Value::Object(f) => f,
                _ => continue,
            },
        };
        let string_args = matches!(target.get("arguments"), Some(Value::String(_)));
        let args = if string_args {
            Value::String(call.arguments.to_string())
        } else {
            call.arguments.clone()
        };
        target.insert("arguments".into(), args);
    }
}

/// The violations of every invalid call, one line each; an undeclared
/// tool's line names the declared tools closest to it.
pub(crate) fn details(set: &ToolSet, verdict: &Verdict) -> Vec<Violation> {
    let mut out = Vec::new();
    for (call, violations) in verdict.calls.iter().zip(&verdict.violations) {
        if violations.is_empty() {
            continue;
        }
        if set.get(&call.name).is_none() {
            let near = closest(set, &call.name);
            let names: Vec<String> = near.iter().map(|n| format!("{n:?}")).collect();
            let message = if names.is_empty() {
                format!("{:?} is not a declared tool", call.name)
            } else {
                format!(
                    "{:?} is not a declared tool (did you mean {}?)",
                    call.name,
                    names.join(" or ")
                )
            };
            out.push(Violation {
                pointer: String::new(),
                message,
            });
            continue;
        }
        out.extend(violations.iter().map(|v| Violation {
            pointer: format!("{}({})", call.name, v.pointer),
            message: v.message.clone(),
        }));
    }
    out
}

/// The declared tools closest to `name`, closest first: by shared words,
/// then by edit distance.
pub(crate) fn closest<'a>(set: &'a ToolSet, name: &str) -> Vec<&'a str> {
    let words = words_of(name);
    let mut scored: Vec<(usize, usize, &str)> = set
        .tools()
        .iter()
        .map(|t| {
            let shared = words_of(&t.name)
                .iter()
                .filter(|w| words.contains(w))
                .count();
            let distance = edit_distance(&name.to_lowercase(), &t.name.to_lowercase());
            (shared, distance, t.name.as_str())
        })
        .filter(|(shared, distance, t)| *shared > 0 || *distance <= t.len().max(name.len()) / 2)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(CLOSEST).map(|s| s.2).collect()
}

/// The lowercase words of an identifier (`get_weather`, `getWeather`).
fn words_of(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            push_word(&mut out, &mut word);
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            push_word(&mut out, &mut word);
        }
        prev_lower = c.is_lowercase();
        word.extend(c.to_lowercase());
    }
    push_word(&mut out, &mut word);
    out
}

fn push_word(out: &mut Vec<String>, word: &mut String) {
    if !word.is_empty() {
        out.push(std::mem::take(word));
    }
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != *cb)).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
