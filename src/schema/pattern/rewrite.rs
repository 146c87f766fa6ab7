//! The rewrite itself: anchors, top-level alternatives, groups and
//! quantifiers (bounded by [`MAX_REPEAT_PRODUCT`]); escapes and classes are
//! [`super::class`]'s.

use super::translator::{Translator, push_class_char};

/// Largest product of nested bounded repetitions kept in a pattern; GBNF
/// refuses expansions of 2000 rules and more.
const MAX_REPEAT_PRODUCT: u64 = 1000;

/// Rewrite `pattern` (JSON Schema search semantics) into an anchored pattern
/// the converter translates into the same language.
pub(crate) fn to_grammar_pattern(pattern: &str) -> Result<String, String> {
    if pattern.is_empty() {
        return Err("empty pattern".into());
    }
    let alts = split_top_level(pattern);
    let mut parts = Vec::with_capacity(alts.len());
    let mut any_anchor = false;
    for alt in &alts {
        let (start, body) = match alt.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, alt.as_str()),
        };
        let (end, body) = match strip_end_anchor(body) {
            Some(rest) => (true, rest),
            None => (false, body),
        };
        any_anchor |= start || end;
        let core = translate(body)?;
        parts.push((start, end, core));
    }
    if parts.len() == 1 {
        let (start, end, core) = &parts[0];
        return Ok(match (start, end) {
            (true, true) => format!("^{core}$"),
            (true, false) => format!("^(?:{core}).*$"),
            (false, true) => format!("^.*(?:{core})$"),
            (false, false) => format!("^.*(?:{core}).*$"),
        });
    }
    if !any_anchor {
        let cores: Vec<&str> = parts.iter().map(|(_, _, c)| c.as_str()).collect();
        return Ok(format!("^.*(?:{}).*$", cores.join("|")));
    }
    let alts: Vec<String> = parts
        .iter()
        .map(|(start, end, core)| {
            let pre = if *start { "" } else { ".*" };
            let post = if *end { "" } else { ".*" };
            format!("{pre}({core}){post}")
        })
        .collect();
    Ok(format!("^(?:{})$", alts.join("|")))
}

/// Split at `|` outside groups and classes.
fn split_top_level(p: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0usize;
    let mut in_class = false;
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        let cur = out.last_mut();
        match c {
            '\\' => {
                if let Some(cur) = cur {
                    cur.push(c);
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                }
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => {
                out.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(cur) = out.last_mut() {
            cur.push(c);
        }
    }
    out
}

/// `body` without a trailing unescaped `$`.
fn strip_end_anchor(body: &str) -> Option<&str> {
    let rest = body.strip_suffix('$')?;
    let backslashes = rest.chars().rev().take_while(|c| *c == '\\').count();
    (backslashes % 2 == 0).then_some(rest)
}

/// Translate an unanchored pattern body.
fn translate(body: &str) -> Result<String, String> {
    let mut t = Translator {
        chars: body.chars().collect(),
        pos: 0,
        out: String::new(),
    };
    t.sequence(0, 1)?;
    if t.pos < t.chars.len() {
        return Err("unbalanced parentheses".into());
    }
    if t.out.is_empty() {
        return Err("empty pattern".into());
    }
    Ok(t.out)
}

impl Translator {
    /// Translate until an unmatched `)` (left unconsumed) or the end.
    fn sequence(&mut self, depth: usize, outer: u64) -> Result<(), String> {
        if depth > 32 {
            return Err("pattern nests too deeply".into());
        }
        let mut atom_start: Option<usize> = None;
        let mut alt_empty = true;
        let mut saw_bar = false;
        while let Some(c) = self.peek() {
            match c {
                ')' => break,
                '|' => {
                    if alt_empty {
                        return Err("empty alternative".into());
                    }
                    self.out.push('|');
                    self.pos += 1;
                    atom_start = None;
                    alt_empty = true;
                    saw_bar = true;
                    continue;
                }
                '*' | '+' | '?' | '{' => {
                    if c == '{' && !self.is_quantifier() {
                        atom_start = Some(self.out.len());
                        self.out.push_str("[{]");
                        self.pos += 1;
                        alt_empty = false;
                        continue;
                    }
                    if atom_start.is_none() {
                        return Err("quantifier without an atom".into());
                    }
                    self.quantifier(outer)?;
                    atom_start = None;
                    continue;
                }
                _ => {}
            }
            alt_empty = false;
            let start = self.out.len();
            match c {
                '(' => {
                    self.pos += 1;
                    self.group_open()?;
                    // The repetition that may follow applies to the group.
                    let mult = outer.saturating_mul(self.following_bound());
                    self.sequence(depth + 1, mult)?;
                    if self.peek() != Some(')') {
                        return Err("unbalanced parentheses".into());
                    }
                    self.pos += 1;
                    self.out.push(')');
                }
                '[' => {
                    self.pos += 1;
                    self.class()?;
                }
                '\\' => {
                    self.pos += 1;
                    self.escape()?;
                }
                '^' | '$' => return Err("anchor inside the pattern".into()),
                ']' | '}' => {
                    self.out.push('[');
                    self.out.push(c);
                    self.out.push(']');
                    self.pos += 1;
                }
                '.' => {
                    self.out.push('.');
                    self.pos += 1;
                }
                '"' => {
                    self.out.push_str("[\"]");
                    self.pos += 1;
                }
                c if !c.is_ascii() || c.is_ascii_control() => {
                    self.out.push('[');
                    push_class_char(&mut self.out, c, false);
                    self.out.push(']');
                    self.pos += 1;
                }
                c => {
                    self.out.push(c);
                    self.pos += 1;
                }
            }
            atom_start = Some(start);
        }
        if alt_empty && (saw_bar || depth > 0) {
            return Err("empty alternative or group".into());
        }
        Ok(())
    }

    /// Handle what follows `(`: plain, `?:`, named groups; refuse lookaround.
    fn group_open(&mut self) -> Result<(), String> {
        if self.peek() != Some('?') {
            self.out.push('(');
            return Ok(());
        }
        let next = self.chars.get(self.pos + 1).copied();
        let after = self.chars.get(self.pos + 2).copied();
        match (next, after) {
            (Some(':'), _) => {
                self.pos += 2;
                self.out.push_str("(?:");
                Ok(())
            }
            (Some('<'), Some(c)) if c != '=' && c != '!' => {
                // Named group: same language as a plain group.
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    if c == '>' {
                        self.out.push('(');
                        return Ok(());
                    }
                }
                Err("unterminated group name".into())
            }
            _ => Err("lookaround or inline flags".into()),
        }
    }

    /// Whether the `{` at `pos` starts a valid `{n}`, `{n,}` or `{n,m}`.
    fn is_quantifier(&self) -> bool {
        parse_braces(&self.chars[self.pos..]).is_some()
    }

    /// Upper bound of a quantifier right after the current position's group.
    fn following_bound(&self) -> u64 {
        // Scan to the matching ')' to see the quantifier after it.
        let mut depth = 1usize;
        let mut i = self.pos;
        let mut in_class = false;
        while i < self.chars.len() {
            match self.chars[i] {
                '\\' => i += 1,
                '[' if !in_class => in_class = true,
                ']' if in_class => in_class = false,
                '(' if !in_class => depth += 1,
                ')' if !in_class => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        match self.chars.get(i + 1) {
            Some('{') => parse_braces(&self.chars[i + 1..])
                .map(|(min, max, _)| max.unwrap_or(min).max(1))
                .unwrap_or(1),
            _ => 1,
        }
    }

    fn quantifier(&mut self, outer: u64) -> Result<(), String> {
        let c = self.chars[self.pos];
        if c == '{' {
            let Some((min, max, len)) = parse_braces(&self.chars[self.pos..]) else {
                return Err("invalid repetition".into());
            };
            if let Some(max) = max
                && max < min
            {
                return Err("repetition bounds out of order".into());
            }
            let bound = max.unwrap_or(min).max(1);
            if outer.saturating_mul(bound) >= MAX_REPEAT_PRODUCT {
                return Err("repetition count too large for a grammar".into());
            }
            self.out.push('{');
            self.out.push_str(&min.to_string());
            match max {
                Some(m) if m == min => {}
                Some(m) => {
                    self.out.push(',');
                    self.out.push_str(&m.to_string());
                }
                None => self.out.push(','),
            }
            self.out.push('}');
            self.pos += len;
        } else {
            self.out.push(c);
            self.pos += 1;
        }
        // Lazy or possessive suffixes do not change a full match's language.
        match self.peek() {
            Some('?') | Some('+') => {
                if self.chars[self.pos] == '?' {
                    self.pos += 1;
                } else {
                    return Err("nested quantifier".into());
                }
            }
            _ => {}
        }
        if matches!(self.peek(), Some('*' | '+' | '?')) {
            return Err("nested quantifier".into());
        }
        if self.peek() == Some('{') && self.is_quantifier() {
            return Err("nested quantifier".into());
        }
        Ok(())
    }
}

/// Parse `{n}`, `{n,}` or `{n,m}` at the start of `s`: (min, max, length).
fn parse_braces(s: &[char]) -> Option<(u64, Option<u64>, usize)> {
    if s.first() != Some(&'{') {
        return None;
    }
    let end = s.iter().position(|c| *c == '}')?;
    let inner: String = s[1..end].iter().collect();
    let (a, b) = match inner.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (inner.as_str(), None),
    };
    if a.is_empty() || !a.chars().all(|c| c.is_ascii_digit()) || a.len() > 9 {
        return None;
    }
    let min: u64 = a.parse().ok()?;
    let max = match b {
        None => Some(min),
        Some("") => None,
        Some(b) if b.chars().all(|c| c.is_ascii_digit()) && b.len() <= 9 => Some(b.parse().ok()?),
        Some(_) => return None,
    };
    Some((min, max, end + 1))
}
