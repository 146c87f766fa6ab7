//! What a character class costs: its ASCII items, its lead bytes, the
//! UTF-8 sequences of its ranges, its properties, its negation.

use super::atoms::{code_point, perl_class, property};
use super::state::{Cost, Cursor, NEGATION};

/// What a class (after its `[`) compiles to: one state for its first byte
/// (all ASCII items), one per lead byte of its two-byte characters, two or
/// three per longer character, what its ranges of non-ASCII characters add
/// ([`range_states`]), the sizes of its properties and Perl classes, and
/// [`NEGATION`] per `^`. Nested classes (the `regex` crate's syntax) are
/// items of the class.
pub(super) fn class(cur: &mut Cursor, case_insensitive: bool) -> Cost {
    let mut leads: u32 = 0;
    let mut chain = 0usize;
    let mut extra = Cost::default();
    let mut depth = 0usize;
    let mut prev: Option<char> = None;
    let mut at_start = true;
    loop {
        if at_start {
            at_start = false;
            if cur.eat('^') {
                extra = extra.add(NEGATION);
            }
            // A `]` first is a literal.
            cur.eat(']');
        }
        let Some(c) = cur.next() else { break };
        let item = match c {
            '[' => {
                depth += 1;
                at_start = true;
                prev = None;
                continue;
            }
            ']' if depth == 0 => break,
            ']' => {
                depth -= 1;
                prev = None;
                continue;
            }
            '-' if prev.is_some() && !matches!(cur.peek(), Some(']') | None) => {
                let lo = prev.take().unwrap_or('\0');
                let hi = match cur.next() {
                    Some('\\') => match class_escape(cur) {
                        Ok(c) => c,
                        Err(cost) => {
                            extra = extra.plus(cost);
                            lo
                        }
                    },
                    Some(c) => c,
                    None => lo,
                };
                let (lo, hi) = (lo.min(hi), lo.max(hi));
                let (states, len) = range_states(u32::from(lo), u32::from(hi));
                extra = extra.add(states);
                chain = chain.max(len.saturating_sub(1));
                continue;
            }
            '\\' => match class_escape(cur) {
                Ok(c) => c,
                Err(cost) => {
                    extra = extra.plus(cost);
                    prev = None;
                    continue;
                }
            },
            c => c,
        };
        match item.len_utf8() {
            1 => {}
            2 => {
                let mut buf = [0u8; 4];
                item.encode_utf8(&mut buf);
                leads |= 1 << (buf[0] & 31);
            }
            n => extra = extra.add(n as u64 - 1),
        }
        prev = Some(item);
    }
    Cost::both(1 + u64::from(leads.count_ones()) + chain as u64)
        .plus(extra)
        .folded(case_insensitive)
}

/// What a range of characters adds to a class: the states of the UTF-8
/// byte sequences `regex-syntax` splits it into (its `Utf8Sequences`, only
/// counted), and the longest of them. Sequences share their states where
/// they are equal: a state is new up to the last byte range short of a
/// whole continuation range (`[80-BF]`); after it, sequences of the same
/// length share one chain.
pub(super) fn range_states(lo: u32, hi: u32) -> (u64, usize) {
    let (mut states, mut longest) = (0u64, 0usize);
    // Each split leaves at most two ranges: the stack stays small.
    let mut stack = vec![(lo, hi)];
    'top: while let Some((lo, mut hi)) = stack.pop() {
        loop {
            // Surrogates are no characters.
            if lo < 0xE000 && hi > 0xD7FF {
                if hi >= 0xE000 {
                    stack.push((0xE000, hi));
                }
                hi = 0xD7FF;
            }
            if lo > hi {
                continue 'top;
            }
            if let Some(max) = [0x7F, 0x7FF, 0xFFFF]
                .into_iter()
                .find(|&max| lo <= max && max < hi)
            {
                stack.push((max + 1, hi));
                hi = max;
                continue;
            }
            if hi <= 0x7F {
                continue 'top;
            }
            let split = (1..4).map(|i| (1u32 << (6 * i)) - 1).find_map(|m| {
                if lo & !m == hi & !m {
                    None
                } else if lo & m != 0 {
                    Some(((lo | m) + 1, lo | m))
                } else if hi & m != m {
                    Some((hi & !m, (hi & !m) - 1))
                } else {
                    None
                }
            });
            match split {
                Some((rest, end)) => {
                    stack.push((rest, hi));
                    hi = end;
                }
                None => {
                    let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
                    let (Some(l), Some(h)) = (char::from_u32(lo), char::from_u32(hi)) else {
                        continue 'top;
                    };
                    let len = l.encode_utf8(&mut a).len();
                    h.encode_utf8(&mut b);
                    let partial = (1..len)
                        .rev()
                        .find(|&k| (a[k], b[k]) != (0x80, 0xBF))
                        .unwrap_or(0);
                    states += partial as u64;
                    longest = longest.max(len);
                    continue 'top;
                }
            }
        }
    }
    (states, longest)
}

/// An escape inside a class (after the `\`): the character it stands for,
/// or the cost of the set it stands for.
pub(super) fn class_escape(cur: &mut Cursor) -> Result<char, Cost> {
    let Some(c) = cur.next() else {
        return Ok('\\');
    };
    if let Some(cost) = perl_class(c) {
        return Err(cost);
    }
    match c {
        'p' | 'P' => Err(Cost::both(property(cur, c == 'P'))),
        'x' | 'u' | 'U' => Ok(code_point(cur, c)),
        c => Ok(c),
    }
}
