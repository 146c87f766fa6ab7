//! What a regular expression costs once compiled: counted repetitions copy
//! what they repeat (`[a-z]{1,500}` is 500 copies of a class), so the size
//! of the automaton is about the product of nested bounds times the atoms.

/// The approximate number of automaton states `pattern` compiles to: atoms
/// count 1 (a Unicode property 50, `.` 4, a class by its length),
/// alternatives add up, `{n,m}` multiplies by its larger bound and `* + ?`
/// double. Saturates instead of overflowing; linear in the pattern's length.
pub fn pattern_cost(pattern: &str) -> u64 {
    // Per open group: (cost of finished alternatives, cost of the current
    // sequence, cost of its last item).
    let mut frames: Vec<(u64, u64, u64)> = vec![(0, 0, 0)];
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let atom = match c {
            '\\' => {
                let (cost, len) = escape(&chars[i..]);
                i += len;
                cost
            }
            '[' => {
                let start = i;
                while i < chars.len() && chars[i] != ']' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                let len = i.min(chars.len()) - start;
                i += 1;
                2 + (len as u64) / 4
            }
            '(' => {
                if chars.get(i) == Some(&'?') {
                    i += 1;
                    while i < chars.len() && !matches!(chars[i], ':' | '=' | '!' | '>') {
                        i += 1;
                    }
                    i += 1;
                }
                frames.push((0, 0, 0));
                continue;
            }
            ')' => {
                if frames.len() < 2 {
                    1
                } else {
                    let (alts, seq, _) = frames.pop().unwrap_or_default();
                    alts.saturating_add(seq).max(1)
                }
            }
            '|' => {
                if let Some(f) = frames.last_mut() {
                    f.0 = f.0.saturating_add(f.1);
                    f.1 = 0;
                    f.2 = 0;
                }
                continue;
            }
            '*' | '+' | '?' => {
                if chars.get(i) == Some(&'?') {
                    i += 1;
                }
                repeat(&mut frames, 2);
                continue;
            }
            '{' => match braces(&chars[i..]) {
                Some((times, len)) => {
                    i += len;
                    repeat(&mut frames, times);
                    continue;
                }
                None => 1,
            },
            '.' => 4,
            c if c.is_ascii() => 1,
            _ => 2,
        };
        if let Some(f) = frames.last_mut() {
            f.1 = f.1.saturating_add(atom);
            f.2 = atom;
        }
    }
    let mut total = 0u64;
    for (alts, seq, _) in frames {
        total = total.saturating_add(alts).saturating_add(seq);
    }
    total
}

/// The last item of the current sequence repeated `times` times in all.
fn repeat(frames: &mut [(u64, u64, u64)], times: u64) {
    if let Some(f) = frames.last_mut() {
        let extra = f.2.saturating_mul(times.saturating_sub(1));
        f.1 = f.1.saturating_add(extra);
        f.2 = f.2.saturating_mul(times.max(1));
    }
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

/// An escape (after the `\`): (cost, characters used).
fn escape(rest: &[char]) -> (u64, usize) {
    match rest.first() {
        None => (1, 0),
        Some('p' | 'P') => {
            let len = match rest.get(1) {
                Some('{') => rest.iter().position(|&c| c == '}').map_or(1, |e| e + 1),
                _ => 2,
            };
            (50, len)
        }
        Some('u') if rest.get(1) == Some(&'{') => {
            (2, rest.iter().position(|&c| c == '}').map_or(1, |e| e + 1))
        }
        Some('u') => (2, 5.min(rest.len())),
        Some('x') => (1, 3.min(rest.len())),
        Some(_) => (1, 1),
    }
}
