//! Text-level repairs of model output before it parses as JSON: code
//! fences, prose around the JSON, trailing commas and truncated structures.

/// The body of the first Markdown code fence (to the end of the text when
/// the closing fence is missing).
pub(super) fn strip_fence(text: &str) -> Option<String> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    // Skip the info string (e.g. "json") up to the end of the line.
    let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
    let info = after[..body_start].trim();
    if info.contains('{') || info.contains('[') {
        // ```{"a":1}``` on one line.
        let end = after.find("```").unwrap_or(after.len());
        return Some(after[..end].trim().to_string());
    }
    let body = &after[body_start..];
    let end = body.find("```").unwrap_or(body.len());
    Some(body[..end].trim().to_string())
}

/// The first JSON object or array in `text`, through its matching bracket
/// (or to the end of the text when it never closes).
pub(super) fn extract_json(text: &str) -> Option<String> {
    let start = text.find(['{', '['])?;
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escape = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escape => escape = false,
                b'\\' => escape = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(text[start..=i].to_string());
                }
            }
            _ => {}
        }
    }
    Some(text[start..].trim_end().to_string())
}

/// `text` without commas directly before `}` or `]` (outside strings);
/// `None` when there are none.
pub(super) fn remove_trailing_commas(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escape = false;
    let mut changed = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            match c {
                _ if escape => escape = false,
                '\\' => escape = true,
                '"' => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        if c == ',' {
            let next = chars[i + 1..].iter().find(|x| !x.is_whitespace());
            if matches!(next, Some('}' | ']')) {
                changed = true;
                continue;
            }
        }
        out.push(c);
    }
    changed.then_some(out)
}

#[derive(Clone, Copy, PartialEq)]
enum Frame {
    Object { expect_key: bool },
    Array,
}

fn closers(stack: &[Frame]) -> String {
    stack
        .iter()
        .rev()
        .map(|f| match f {
            Frame::Object { .. } => '}',
            Frame::Array => ']',
        })
        .collect()
}

/// Close a truncated JSON text: finish an unterminated string and close the
/// open arrays/objects, dropping a dangling key or partial value when that
/// is what it takes to parse. `None` when the text is not truncated or
/// cannot be closed into a value.
pub(super) fn close_truncated(text: &str) -> Option<serde_json::Value> {
    let text = text.trim_end();
    let mut stack: Vec<Frame> = Vec::new();
    let mut in_string = false;
    let mut escape = false;
    // Last (byte offset, stack) where cutting leaves a complete prefix.
    let mut safe: Option<(usize, Vec<Frame>)> = None;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escape => escape = false,
                '\\' => escape = true,
                '"' => {
                    in_string = false;
                    let is_key = matches!(stack.last(), Some(Frame::Object { expect_key: true }));
                    if !is_key {
                        safe = Some((i + 1, stack.clone()));
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => {
                stack.push(Frame::Object { expect_key: true });
                safe = Some((i + 1, stack.clone()));
            }
            '[' => {
                stack.push(Frame::Array);
                safe = Some((i + 1, stack.clone()));
            }
            '}' | ']' => {
                stack.pop();
                if stack.is_empty() {
                    // Complete before the end: not a truncation.
                    return None;
                }
                safe = Some((i + 1, stack.clone()));
            }
            ':' => {
                if let Some(Frame::Object { expect_key }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            ',' => {
                safe = Some((i, stack.clone()));
                if let Some(Frame::Object { expect_key }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            _ => {}
        }
    }
    if stack.is_empty() {
        return None;
    }
    // 1. Close everything where it stands.
    let mut direct = text.to_string();
    if in_string {
        direct = trim_partial_escape(&direct);
        direct.push('"');
    }
    direct.push_str(&closers(&stack));
    if let Ok(v) = serde_json::from_str(&direct) {
        return Some(v);
    }
    // 2. Cut back to the last complete element.
    let (at, st) = safe?;
    let mut cut = text[..at].to_string();
    cut.push_str(&closers(&st));
    serde_json::from_str(&cut).ok()
}

/// Drop a dangling `\` or partial `\uXX` escape at the end of a string.
fn trim_partial_escape(s: &str) -> String {
    let bytes = s.as_bytes();
    // Find the last backslash that starts an escape within the last 6 bytes.
    let tail_start = bytes.len().saturating_sub(6);
    for i in (tail_start..bytes.len()).rev() {
        if bytes[i] != b'\\' {
            continue;
        }
        let run = bytes[..=i]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if run % 2 == 0 {
            break; // an escaped backslash, complete
        }
        let rest = &s[i + 1..];
        let complete = match rest.chars().next() {
            None => false,
            Some('u') => rest.len() >= 5,
            Some(_) => true,
        };
        if !complete {
            return s[..i].to_string();
        }
        break;
    }
    s.to_string()
}
