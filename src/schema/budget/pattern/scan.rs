//! The scan over a whole pattern: items priced as they come, repetitions
//! multiplying what they repeat, groups and alternatives summed.

use super::atoms::{escape, literal};
use super::class::class;
use super::state::{Cost, Cursor, DOT, Frame, MAX_NESTING, ecma_escaped};

/// The approximate number of NFA states `pattern` compiles to (see the
/// module's documentation). Saturates instead of overflowing; linear in the
/// pattern's length. Broken patterns are priced too (compiling finds them).
pub fn pattern_cost(pattern: &str) -> u64 {
    measure(pattern).0
}

/// [`pattern_cost`] and the number of character reads it took.
pub(super) fn measure(pattern: &str) -> (u64, usize) {
    let mut cur = Cursor::new(ecma_escaped(pattern));
    cur.reads = pattern.len();
    let mut frames = vec![Frame::default()];
    let mut fancy = false;
    while let Some(c) = cur.next() {
        let flags = frames.last().map(|f| f.flags).unwrap_or_default();
        if flags.verbose {
            if c.is_whitespace() {
                continue;
            }
            if c == '#' {
                while cur.next().is_some_and(|c| c != '\n') {}
                continue;
            }
        }
        let atom = match c {
            '\\' => escape(&mut cur, flags.case_insensitive, &mut fancy),
            '[' => class(&mut cur, flags.case_insensitive),
            '(' => match open_group(&mut cur, &mut frames, &mut fancy) {
                Some(backref) => backref,
                None if frames.len() > MAX_NESTING + 1 => return (u64::MAX, cur.reads),
                None => continue,
            },
            ')' if frames.len() > 1 => match frames.pop() {
                Some(f) => f.total().add(if f.capture { 2 } else { 0 }),
                None => Cost::both(1),
            },
            '|' => {
                if let Some(f) = frames.last_mut() {
                    f.alts = f.total().add(1);
                    f.seq = Cost::default();
                    f.last = Cost::default();
                }
                continue;
            }
            '*' | '+' | '?' => {
                if matches!(cur.peek(), Some('?' | '+')) {
                    cur.next();
                }
                repeat(&mut frames, |x| x.add(1));
                continue;
            }
            '{' => match braces(&mut cur) {
                Ok((lo, hi)) => {
                    repeat(&mut frames, |x| match hi {
                        // {n}: n copies.
                        Some(hi) if hi <= lo => x.times(lo),
                        // {n,m}: n copies and m - n optional ones.
                        Some(hi) => x.times(lo).plus(x.add(1).times(hi - lo)),
                        // {n,}: n copies, the last one looping.
                        None => x.times(lo.max(1)).add(1),
                    });
                    continue;
                }
                // Not a repetition: `{` and what was read count as
                // literals.
                Err(read) => Cost::both(1 + read),
            },
            '.' => Cost::both(DOT),
            c => Cost::both(literal(c, flags.case_insensitive)),
        };
        if let Some(f) = frames.last_mut() {
            f.seq = f.seq.plus(atom);
            f.last = atom;
        }
    }
    let total = frames
        .iter()
        .fold(Cost::default(), |sum, f| sum.plus(f.total()));
    let cost = if fancy { total.unicode } else { total.ecma };
    (cost, cur.reads)
}

/// The last item of the current sequence replaced by `f` of itself.
pub(super) fn repeat(frames: &mut [Frame], f: impl Fn(Cost) -> Cost) {
    if let Some(fr) = frames.last_mut() {
        let new = f(fr.last);
        fr.seq = fr.seq.minus(fr.last).plus(new);
        fr.last = new;
    }
}

/// A `(`: push a group, or set the flags of the current one (`(?i)`). A
/// named back-reference `(?P=name)` is an item instead: its cost.
pub(super) fn open_group(
    cur: &mut Cursor,
    frames: &mut Vec<Frame>,
    fancy: &mut bool,
) -> Option<Cost> {
    let mut flags = frames.last().map(|f| f.flags).unwrap_or_default();
    let mut capture = false;
    if !cur.eat('?') {
        capture = true;
    } else {
        match cur.peek() {
            Some('=' | '!') => {
                cur.next();
                *fancy = true;
            }
            Some('<') => {
                cur.next();
                if matches!(cur.peek(), Some('=' | '!')) {
                    cur.next();
                    *fancy = true;
                } else {
                    cur.until('>', 0);
                    capture = true;
                }
            }
            Some('P') => {
                cur.next();
                match cur.next() {
                    Some('<') => {
                        cur.until('>', 0);
                        capture = true;
                    }
                    _ => {
                        // `(?P=name)` (or `(?P>name)`): a back-reference.
                        *fancy = true;
                        cur.until(')', 0);
                        return Some(Cost::both(1));
                    }
                }
            }
            Some('>' | '#') => {
                cur.next();
            }
            _ => {
                let mut on = true;
                while let Some(c) = cur.peek() {
                    match c {
                        '-' => on = false,
                        'i' => flags.case_insensitive = on,
                        'x' => flags.verbose = on,
                        c if c.is_ascii_alphabetic() => {}
                        _ => break,
                    }
                    cur.next();
                }
                if cur.eat(')') {
                    if let Some(f) = frames.last_mut() {
                        f.flags = flags;
                    }
                    return None;
                }
                cur.eat(':');
            }
        }
    }
    frames.push(Frame {
        flags,
        capture,
        ..Frame::default()
    });
    None
}

/// A counted repetition after its `{`: `{n}` (no upper bound beyond n is
/// `Some(n)`), `{n,}` (`None`) or `{n,m}`. Spaces are allowed (the
/// verbose flag allows them), digits any in number. If it is none of
/// these, the number of characters read.
pub(super) fn braces(cur: &mut Cursor) -> Result<(u64, Option<u64>), u64> {
    pub(super) fn number(cur: &mut Cursor, read: &mut u64) -> Option<u64> {
        let mut n: Option<u64> = None;
        while let Some(c) = cur.peek() {
            if let Some(d) = c.to_digit(10) {
                n = Some(
                    n.unwrap_or(0)
                        .saturating_mul(10)
                        .saturating_add(u64::from(d)),
                );
            } else if c != ' ' {
                break;
            }
            cur.next();
            *read += 1;
        }
        n
    }
    let mut read = 0u64;
    let lo = match number(cur, &mut read) {
        Some(lo) => lo,
        // `{,m}`.
        None if cur.peek() == Some(',') => 0,
        None => return Err(read),
    };
    if cur.eat('}') {
        return Ok((lo, Some(lo)));
    }
    if !cur.eat(',') {
        return Err(read);
    }
    read += 1;
    let hi = number(cur, &mut read);
    if cur.eat('}') {
        Ok((lo, hi.map(|hi| hi.max(lo))))
    } else {
        Err(read)
    }
}
