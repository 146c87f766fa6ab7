//! How well each declared tool matches the question, by the words they
//! share: the latest user message against a tool's name, description and
//! parameter names, each shared word weighed by how few tools have it (a
//! word every tool has tells nothing), words of the name counting double.
//!
//! The instruction lists tools most relevant first and shows its call
//! example with the most relevant one: small models lean towards the
//! first tool listed and copy the example's name. Only the order changes;
//! the model still chooses among every declared tool.

use std::collections::{HashMap, HashSet};

use super::spec::Tool;

/// Bytes of the question that are read.
const MAX_QUESTION: usize = 2048;
/// Bytes of a description that are read.
const MAX_DESCRIPTION: usize = 512;
/// Words taken from one text.
const MAX_WORDS: usize = 256;

const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do",
    "does", "for", "from", "get", "give", "has", "have", "how", "i", "if", "in", "into", "is",
    "it", "its", "let", "like", "me", "my", "need", "of", "on", "one", "or", "our", "please",
    "return", "some", "tell", "than", "that", "the", "their", "them", "then", "there", "this",
    "to", "two", "up", "us", "want", "was", "we", "what", "whats", "when", "where", "which", "who",
    "why", "will", "with", "would", "you", "your",
];

/// The tools' indexes, most relevant to `question` first; ties keep the
/// declared order. `None` when no tool shares a word with the question.
pub(crate) fn rank(tools: &[&Tool], question: &str) -> Option<Vec<usize>> {
    let asked: HashSet<String> = asked(question).collect();
    if asked.is_empty() {
        return None;
    }
    let vocab: Vec<(HashSet<String>, HashSet<String>)> =
        tools.iter().map(|t| vocabulary(t)).collect();
    let mut df: HashMap<&str, usize> = HashMap::new();
    for (name, rest) in &vocab {
        for w in name.union(rest) {
            *df.entry(w.as_str()).or_default() += 1;
        }
    }
    let scores: Vec<f64> = vocab
        .iter()
        .map(|(name, rest)| {
            asked
                .iter()
                .map(|w| {
                    let weight = if name.contains(w) {
                        2.0
                    } else if rest.contains(w) {
                        1.0
                    } else {
                        return 0.0;
                    };
                    weight / df.get(w.as_str()).copied().unwrap_or(1) as f64
                })
                .sum()
        })
        .collect();
    if scores.iter().all(|s| *s <= 0.0) {
        return None;
    }
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    Some(order)
}

/// Whether `question` has words (other than stopwords) and `tool` shares
/// none of them: not in its name, description or parameter names.
pub(crate) fn unrelated(tool: &Tool, question: &str) -> bool {
    let (name, rest) = vocabulary(tool);
    let mut asked = asked(question).peekable();
    asked.peek().is_some() && asked.all(|w| !name.contains(&w) && !rest.contains(&w))
}

/// The words of `question` (its first [`MAX_QUESTION`] bytes) that are
/// not stopwords.
fn asked(question: &str) -> impl Iterator<Item = String> + '_ {
    words(clip(question, MAX_QUESTION)).filter(|w| !STOPWORDS.contains(&w.as_str()))
}

/// A tool's words: from its name, and from its description and parameter
/// names.
fn vocabulary(tool: &Tool) -> (HashSet<String>, HashSet<String>) {
    let name: HashSet<String> = words(&split_case(&tool.name)).collect();
    let mut rest: HashSet<String> = words(clip(&tool.description, MAX_DESCRIPTION)).collect();
    if let Some(props) = tool
        .parameters
        .get("properties")
        .and_then(|p| p.as_object())
    {
        for key in props.keys().take(MAX_WORDS) {
            rest.extend(words(&split_case(key)));
        }
    }
    (name, rest)
}

/// `camelCase` and `snake_case` as separate words.
fn split_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars().take(MAX_DESCRIPTION) {
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.push(c);
    }
    out
}

/// Lower-cased words of letters and digits, plural `s` dropped, bounded.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').replace('\'', "").to_lowercase())
        .filter(|w| !w.is_empty())
        .map(stem)
        .take(MAX_WORDS)
}

fn stem(w: String) -> String {
    if w.len() > 4 && w.ends_with("ies") {
        format!("{}y", &w[..w.len() - 3])
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w[..w.len() - 1].to_owned()
    } else {
        w
    }
}

/// The longest prefix of `text` of at most `max` bytes on a char boundary.
pub(super) fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
#[path = "relevance_tests.rs"]
mod tests;
