//! What a regular expression holds once compiled (see the parent module
//! for the measurements): a fixed part plus each atom by its kind,
//! repetitions copying what they repeat, as regex-automata compiles them.

/// Per pattern, before its atoms.
const PATTERN: u64 = 16 * 1024;
/// A pattern with look-around or a backreference: a second engine.
const FANCY: u64 = 16 * 1024;
/// Per copy of an ASCII character.
const ASCII: u64 = 128;
/// Per copy of a non-ASCII character.
const NON_ASCII: u64 = 512;
/// Per copy of a class spanning Unicode (`.`, `\s`, `[^a]`).
const WIDE: u64 = 1536;
/// Per copy of a Unicode property (`\p{L}`).
const PROPERTY: u64 = 56 * 1024;
/// A capturing group costs this many times its content more…
const CAPTURE_FACTOR: u64 = 6;
/// …up to this much (regex-automata's one-pass DFA size limit).
const CAPTURE_MAX: u64 = 1024 * 1024;
/// `(?i)` multiplies ASCII atoms by this.
const FOLD_FACTOR: u64 = 5;
/// A pattern with a class spanning Unicode or a property: a larger fixed
/// part (`^\S+$` holds 22 KB).
const WIDE_FIXED: u64 = 8 * 1024;

/// One open group of a pattern: finished alternatives, the current
/// sequence, its last item (what a repetition copies), and whether the
/// group captures.
#[derive(Default)]
struct Group {
    alternatives: u64,
    sequence: u64,
    last: u64,
    capturing: bool,
}

impl Group {
    fn push(&mut self, atom: u64) {
        self.sequence = self.sequence.saturating_add(atom);
        self.last = atom;
    }

    /// The last item repeated `times` times in all.
    fn repeat(&mut self, times: u64) {
        let extra = self.last.saturating_mul(times.saturating_sub(1));
        self.sequence = self.sequence.saturating_add(extra);
        self.last = self.last.saturating_mul(times.max(1));
    }

    fn total(&self) -> u64 {
        let content = self.alternatives.saturating_add(self.sequence);
        if self.capturing {
            content.saturating_add(content.saturating_mul(CAPTURE_FACTOR).min(CAPTURE_MAX))
        } else {
            content
        }
    }
}

/// Estimated bytes `pattern` holds once compiled: a fixed part plus each
/// atom by its kind, repetitions copying what they repeat (as
/// regex-automata compiles them). Linear in the pattern's length.
pub(super) fn pattern_bytes(pattern: &str) -> u64 {
    let chars: Vec<char> = pattern.chars().collect();
    let mut groups = vec![Group::default()];
    let mut fold = false;
    let mut fancy = false;
    let mut wide = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let atom = match c {
            '\\' => {
                let (bytes, used, backreference) = escape(&chars[i..], fold);
                fancy |= backreference;
                i += used;
                bytes
            }
            '[' => {
                let (bytes, used) = class(&chars[i..], fold);
                i += used;
                bytes
            }
            '(' => {
                let open = group(&chars[i..]);
                i += open.used;
                fold |= open.fold;
                fancy |= open.fancy;
                if open.is_group {
                    groups.push(Group {
                        capturing: open.capturing,
                        ..Group::default()
                    });
                }
                continue;
            }
            ')' => match groups.len() {
                0 | 1 => ASCII,
                _ => groups.pop().map_or(ASCII, |g| g.total()),
            },
            '|' => {
                if let Some(g) = groups.last_mut() {
                    g.alternatives = g.alternatives.saturating_add(g.sequence);
                    g.sequence = 0;
                    g.last = 0;
                }
                continue;
            }
            '*' | '+' | '?' => {
                if chars.get(i) == Some(&'?') {
                    i += 1;
                }
                if let Some(g) = groups.last_mut() {
                    g.repeat(2);
                }
                continue;
            }
            '{' => match braces(&chars[i..]) {
                Some((times, used)) => {
                    i += used;
                    if let Some(g) = groups.last_mut() {
                        g.repeat(times);
                    }
                    continue;
                }
                None => ascii(fold),
            },
            '.' => WIDE,
            '^' | '$' => 0,
            c if c.is_ascii() => ascii(fold),
            _ => NON_ASCII,
        };
        wide |= atom >= WIDE;
        if let Some(g) = groups.last_mut() {
            g.push(atom);
        }
    }
    // Groups left open count as closed.
    let mut total = 0u64;
    while let Some(g) = groups.pop() {
        total = total.saturating_add(g.total());
    }
    let fixed = PATTERN + if fancy { FANCY } else { 0 } + if wide { WIDE_FIXED } else { 0 };
    fixed.saturating_add(total)
}

fn ascii(fold: bool) -> u64 {
    if fold { ASCII * FOLD_FACTOR } else { ASCII }
}

/// An escape (after the `\`): (bytes, characters used, is a backreference).
fn escape(rest: &[char], fold: bool) -> (u64, usize, bool) {
    match rest.first() {
        None => (ascii(fold), 0, false),
        Some('p' | 'P') => {
            let used = match rest.get(1) {
                Some('{') => closing_brace(rest),
                _ => 2.min(rest.len()),
            };
            (PROPERTY, used, false)
        }
        Some('s' | 'S' | 'W' | 'D') => (WIDE, 1, false),
        // Word boundaries look at Unicode word characters on both sides.
        Some('b' | 'B') => (2 * WIDE, 1, false),
        // ASCII classes in the ECMA-262 dialect.
        Some('d' | 'w') => (class_ascii(11, fold), 1, false),
        Some('u') if rest.get(1) == Some(&'{') => (NON_ASCII, closing_brace(rest), false),
        Some('u') => (NON_ASCII, 5.min(rest.len()), false),
        Some('x') => (NON_ASCII, 3.min(rest.len()), false),
        Some('1'..='9') => (ascii(fold), 1, true),
        Some(_) => (ascii(fold), 1, false),
    }
}

/// Characters up to a `}` among the next few (a name or code point), else
/// 1: never a scan of the rest of the pattern, which would make a pattern
/// of many unclosed `\p{` quadratic.
fn closing_brace(rest: &[char]) -> usize {
    rest.iter()
        .take(64)
        .position(|&c| c == '}')
        .map_or(1, |e| e + 1)
}

/// An ASCII class of `len` characters of source: measured 88 bytes for
/// `[a-z]`, 185 for `[a-zA-Z0-9_]`.
fn class_ascii(len: usize, fold: bool) -> u64 {
    let bytes = 64 + 16 * len as u64;
    if fold { bytes * FOLD_FACTOR } else { bytes }
}

/// A class (after the `[`): (bytes, characters used).
fn class(rest: &[char], fold: bool) -> (u64, usize) {
    let negated = rest.first() == Some(&'^');
    let mut properties = 0u64;
    let (mut wide, mut non_ascii) = (negated, false);
    let mut i = 0;
    while i < rest.len() && rest[i] != ']' {
        match rest[i] {
            '\\' => {
                match rest.get(i + 1) {
                    Some('p' | 'P') => properties += 1,
                    Some('s' | 'S' | 'W' | 'D') => wide = true,
                    Some('u' | 'x') => non_ascii = true,
                    _ => {}
                }
                i += 2;
            }
            c => {
                non_ascii |= !c.is_ascii();
                i += 1;
            }
        }
    }
    let len = i.min(rest.len());
    let bytes = if properties > 0 {
        PROPERTY.saturating_mul(properties)
    } else if wide {
        WIDE
    } else if non_ascii {
        NON_ASCII
    } else {
        class_ascii(len, fold)
    };
    (bytes, (i + 1).min(rest.len()))
}

/// What a `(` opens (read after it).
struct Open {
    /// Characters used after the `(`.
    used: usize,
    /// A group follows (false for a flag setting such as `(?i)`).
    is_group: bool,
    capturing: bool,
    fold: bool,
    fancy: bool,
}

fn group(rest: &[char]) -> Open {
    let mut open = Open {
        used: 0,
        is_group: true,
        capturing: true,
        fold: false,
        fancy: false,
    };
    if rest.first() != Some(&'?') {
        return open;
    }
    open.capturing = false;
    match (rest.get(1), rest.get(2)) {
        (Some('=' | '!' | '>'), _) | (Some('<'), Some('=' | '!')) => {
            open.fancy = true;
            open.used = if rest.get(1) == Some(&'<') { 3 } else { 2 };
        }
        (Some('<' | 'P' | '\''), _) => {
            // A named group: captures.
            open.capturing = true;
            open.used = rest
                .iter()
                .position(|&c| c == '>' || c == '\'')
                .filter(|&e| e > 1)
                .map_or(rest.len(), |e| e + 1);
        }
        _ => {
            // Flags, then `)` (for the rest of the pattern) or `:` (a group).
            let end = rest
                .iter()
                .position(|&c| c == ')' || c == ':')
                .unwrap_or(rest.len());
            let flags = &rest[1..end.max(1)];
            open.fold = flags.contains(&'i') && !flags.starts_with(&['-']);
            open.is_group = rest.get(end) == Some(&':');
            open.used = (end + 1).min(rest.len());
        }
    }
    open
}

/// `{n}`, `{n,}` or `{n,m}` (after the `{`): (copies, characters used).
fn braces(rest: &[char]) -> Option<(u64, usize)> {
    let end = rest.iter().take(64).position(|&c| c == '}')?;
    let inner: String = rest[..end].iter().collect();
    let (lo, hi) = match inner.split_once(',') {
        Some((lo, hi)) => (lo.trim(), Some(hi.trim())),
        None => (inner.trim(), None),
    };
    let lo: u64 = lo.parse().ok()?;
    let copies = match hi {
        None => lo,
        Some("") => lo.saturating_add(1),
        Some(hi) => hi.parse::<u64>().ok()?.max(lo),
    };
    Some((copies.max(1), end + 1))
}
