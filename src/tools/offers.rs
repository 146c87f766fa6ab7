//! Whether a question holds something a tool's argument could take: the
//! values a call could be grounded in ([`crate::tools::grounding`]). A
//! question that shares no word with any tool and offers no value can only
//! be answered with calls nobody asked for, so it is asked for an answer
//! at once (see `tools.answer_unrelated`).
//!
//! Read as values: quoted text, a word holding a digit (`1Z999AA1`,
//! `2025-12-24`, `18:00`; a bare number such as `26.2` only when some tool
//! takes a number), a capitalized word that does not start a sentence
//! (`Japan`, `AAPL`; any all-capital word), and words holding `@`, `/` or
//! an inner `.` (addresses, paths, hosts). A sentence's first word is not
//! read as a name ("Japan's population?" offers nothing by this reading).

use serde_json::Value;

use super::relevance::clip;
use super::spec::Tool;

/// Bytes of the question that are read.
const MAX_QUESTION: usize = 2048;
/// Schema nodes looked at for a numeric parameter, per tool.
const MAX_NODES: usize = 256;

/// Whether `question` offers a value some tool of `tools` could take.
pub(crate) fn offers_values(tools: &[Tool], question: &str) -> bool {
    let question = clip(question, MAX_QUESTION);
    if ['"', '“', '”', '«', '`']
        .iter()
        .any(|q| question.contains(*q))
    {
        return true;
    }
    // Whether some tool takes a number: looked up once, at the first bare
    // number.
    let mut numeric = None;
    let mut takes_numbers =
        || *numeric.get_or_insert_with(|| tools.iter().any(|t| takes_a_number(&t.parameters)));
    let mut starts_sentence = true;
    for raw in question.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if is_value(word, starts_sentence, &mut takes_numbers) {
            return true;
        }
        starts_sentence = raw.ends_with(['.', '!', '?', ':', ';']) || word.is_empty();
    }
    false
}

/// Whether one `word` (trimmed of punctuation at both ends) reads as a
/// value; `takes_numbers` is asked only for a bare number.
fn is_value(word: &str, starts_sentence: bool, takes_numbers: &mut impl FnMut() -> bool) -> bool {
    let Some(first) = word.chars().next() else {
        return false;
    };
    if word.chars().any(|c| c.is_ascii_digit()) {
        let bare_number = word
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',');
        return !bare_number || takes_numbers();
    }
    if word.contains(['@', '/', '.']) {
        return true;
    }
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let all_caps = letters >= 2 && word.chars().all(|c| !c.is_lowercase());
    if all_caps {
        return true;
    }
    first.is_uppercase() && !starts_sentence && word != "I" && !word.starts_with("I'")
}

/// Whether a parameters schema has a `number` or `integer` anywhere
/// (within [`MAX_NODES`] nodes; past them, as if it had).
fn takes_a_number(schema: &Value) -> bool {
    let mut stack = vec![schema];
    let mut seen = 0;
    while let Some(node) = stack.pop() {
        seen += 1;
        if seen > MAX_NODES {
            return true;
        }
        match node {
            Value::Object(map) => {
                if let Some(t) = map.get("type") {
                    let numeric = |v: &Value| matches!(v.as_str(), Some("number" | "integer"));
                    if numeric(t) || t.as_array().is_some_and(|a| a.iter().any(numeric)) {
                        return true;
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
#[path = "offers_tests.rs"]
mod tests;
