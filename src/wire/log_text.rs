//! Text for log lines that no value can break: a value a client or a
//! model wrote (a model name, a tool name, an argument key) may hold a
//! newline, or another character some reader takes for one (Python's
//! `splitlines` also breaks at U+0085, U+2028 and U+2029), followed by
//! what reads like a line of augur's own.

use std::borrow::Cow;

/// Whether `c` breaks a line, or drives a terminal, to some reader.
fn breaks(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every control character and line or paragraph separator
/// escaped (`\n`, `\r`, `\t`, `\u{1b}`); borrowed when there was none.
pub(crate) fn escaped(text: &str) -> Cow<'_, str> {
    if !text.contains(breaks) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if breaks(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.into()
}

/// A JSON text with the line breaks `serde_json` leaves raw (U+0085,
/// U+2028, U+2029) escaped: they only occur inside its strings, where the
/// escape means the same.
pub(crate) fn json_line(json: &str) -> Cow<'_, str> {
    const RAW: [char; 3] = ['\u{85}', '\u{2028}', '\u{2029}'];
    if !json.contains(RAW) {
        return json.into();
    }
    json.replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
        .into()
}

#[cfg(test)]
#[path = "log_text_tests.rs"]
mod tests;
