//! What a regular expression costs once compiled, in states of the
//! Thompson NFA the `regex` crate builds for it (the validator compiles
//! every `pattern` so; its other engines grow with that NFA).
//!
//! Counted repetitions copy what they repeat (`[a-z]{1,500}` is 500 copies
//! of a class), so the size is about the product of nested bounds times the
//! atoms. What an atom compiles to is not what its text suggests: Unicode
//! classes are compiled to automata over UTF-8 bytes, and `\p{L}` is about
//! 300 states, `.` and `[^a]` 8, where `a` and `[a-z]` are one. Atoms here
//! are weighed by measuring what they compile to (`regex-automata` 0.4):
//! Unicode properties by a table of their measured sizes (any other by the
//! largest), a class by its items (ASCII items share one state, each other
//! lead byte, range or property adds its own), a negation adds the
//! complement of `.`, and under `(?i)` a class or property counts twice
//! (its case variants) and the letters `k` and `s` three times (`K`, `ſ`).
//!
//! The validator (`jsonschema`) first translates ECMA-262 syntax: `\d` and
//! `\w` become ASCII classes, and a `[` inside a class is escaped. A pattern
//! with a look-around or a back-reference is not translated (it goes to
//! `fancy-regex` as written), and there `\d` and `\w` are Unicode classes:
//! both readings are priced in the one pass and the one that applies kept.
//!
//! The scan reads each character a bounded number of times, so its work is
//! linear in the pattern's length; groups nest on a heap stack at most
//! [`MAX_NESTING`] deep.

/// The approximate number of NFA states `pattern` compiles to (see the
/// module's documentation). Saturates instead of overflowing; linear in the
/// pattern's length. Broken patterns are priced too (compiling finds them).
pub fn pattern_cost(pattern: &str) -> u64 {
    measure(pattern).0
}

/// The largest Unicode property (`Grapheme_Base`, 343 states), the weight
/// of a property the table does not know.
const MAX_PROPERTY: u64 = 360;
/// What a negation adds: the complement of a set is about its size plus
/// that of `.` (8 states).
const NEGATION: u64 = 8;
/// `.`: any character but `\n`, over UTF-8.
const DOT: u64 = 8;
/// Groups nested deeper than this are refused by both parsers the
/// validator uses (`regex-syntax` nests 250 deep, `fancy-regex` 64): such
/// a pattern is priced as too costly without reading further.
pub(super) const MAX_NESTING: usize = 250;

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

/// A cost under both readings of a pattern: translated from ECMA-262 (the
/// usual case, `\d` and `\w` are ASCII) and as written (Unicode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cost {
    ecma: u64,
    unicode: u64,
}

impl Cost {
    const fn both(n: u64) -> Cost {
        Cost {
            ecma: n,
            unicode: n,
        }
    }

    fn plus(self, o: Cost) -> Cost {
        Cost {
            ecma: self.ecma.saturating_add(o.ecma),
            unicode: self.unicode.saturating_add(o.unicode),
        }
    }

    fn minus(self, o: Cost) -> Cost {
        Cost {
            ecma: self.ecma.saturating_sub(o.ecma),
            unicode: self.unicode.saturating_sub(o.unicode),
        }
    }

    fn add(self, n: u64) -> Cost {
        self.plus(Cost::both(n))
    }

    fn times(self, n: u64) -> Cost {
        Cost {
            ecma: self.ecma.saturating_mul(n),
            unicode: self.unicode.saturating_mul(n),
        }
    }

    /// Under `(?i)`: the class and its case variants.
    fn folded(self, case_insensitive: bool) -> Cost {
        if case_insensitive {
            self.times(2).add(4)
        } else {
            self
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    case_insensitive: bool,
    verbose: bool,
}

/// One open group.
#[derive(Debug, Default)]
struct Frame {
    /// Finished alternatives (and their branch states).
    alts: Cost,
    /// The current sequence.
    seq: Cost,
    /// Its last item, which a repetition copies.
    last: Cost,
    flags: Flags,
    /// A capturing group adds its two capture states.
    capture: bool,
}

impl Frame {
    fn total(&self) -> Cost {
        self.alts.plus(self.seq)
    }
}

/// The pattern's characters, read through a counter of reads.
struct Cursor {
    chars: Vec<char>,
    pos: usize,
    reads: usize,
}

impl Cursor {
    fn new(chars: Vec<char>) -> Cursor {
        Cursor {
            chars,
            pos: 0,
            reads: 0,
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.reads += 1;
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// Consume up to and including `end` (or to the end of the pattern);
    /// what was read before it, at most `keep` characters of it kept.
    fn until(&mut self, end: char, keep: usize) -> String {
        let mut out = String::new();
        while let Some(c) = self.next() {
            if c == end {
                break;
            }
            if out.len() < keep {
                out.push(c);
            }
        }
        out
    }
}

/// `pattern` as the validator compiles it: `jsonschema` escapes every `[`
/// inside a class (ECMA-262 has no nested classes). Its notion of a class
/// ends at the first `]`, even one the `regex` crate reads as a literal
/// (`[]…`), so nested classes can still reach the compiler.
fn ecma_escaped(pattern: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(pattern.len());
    let (mut in_class, mut escaped) = (false, false);
    for c in pattern.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '[' {
            if in_class {
                out.push('\\');
            }
            in_class = true;
        } else if c == ']' {
            in_class = false;
        }
        out.push(c);
    }
    out
}

/// The last item of the current sequence replaced by `f` of itself.
fn repeat(frames: &mut [Frame], f: impl Fn(Cost) -> Cost) {
    if let Some(fr) = frames.last_mut() {
        let new = f(fr.last);
        fr.seq = fr.seq.minus(fr.last).plus(new);
        fr.last = new;
    }
}

/// A literal character: a state per UTF-8 byte, and under `(?i)` its case
/// variants (for ASCII only `k` and `s` have non-ASCII ones).
fn literal(c: char, case_insensitive: bool) -> u64 {
    match (c.is_ascii(), case_insensitive) {
        (true, true) if matches!(c.to_ascii_lowercase(), 'k' | 's') => 3,
        (true, _) => 1,
        (false, false) => c.len_utf8() as u64,
        (false, true) => 2 * c.len_utf8() as u64,
    }
}

/// `\d`, `\D`, `\w`, `\W`, `\s`, `\S`: measured sizes as translated
/// (ASCII, ECMA-262 white space) and as Unicode classes.
fn perl_class(c: char) -> Option<Cost> {
    let (ecma, unicode) = match c {
        'd' => (1, 25),
        'D' => (NEGATION, 30),
        'w' => (1, 316),
        'W' => (NEGATION, 318),
        's' => (10, 10),
        'S' => (17, 17),
        _ => return None,
    };
    Some(Cost { ecma, unicode })
}

/// An escape outside a class (after the `\`).
fn escape(cur: &mut Cursor, case_insensitive: bool, fancy: &mut bool) -> Cost {
    let Some(c) = cur.next() else {
        return Cost::both(1);
    };
    if let Some(cost) = perl_class(c) {
        return cost;
    }
    match c {
        'p' | 'P' => Cost::both(property(cur, c == 'P')).folded(case_insensitive),
        'x' | 'u' | 'U' => Cost::both(literal(code_point(cur, c), case_insensitive)),
        '1'..='9' => {
            // A back-reference: only `fancy-regex` has them.
            *fancy = true;
            while cur.peek().is_some_and(|c| c.is_ascii_digit()) {
                cur.next();
            }
            Cost::both(1)
        }
        'k' => {
            *fancy = true;
            if matches!(cur.peek(), Some('<' | '{')) {
                let end = if cur.next() == Some('<') { '>' } else { '}' };
                cur.until(end, 0);
            }
            Cost::both(1)
        }
        'c' => {
            cur.next();
            Cost::both(1)
        }
        c => Cost::both(literal(c, case_insensitive)),
    }
}

/// The character of `\x7F`, `\x{…}`, `\u00E9`, `\U0001F600` (after the
/// letter); one of four UTF-8 bytes if unreadable.
fn code_point(cur: &mut Cursor, kind: char) -> char {
    let hex = if cur.eat('{') {
        cur.until('}', 8)
    } else {
        let digits = match kind {
            'x' => 2,
            'u' => 4,
            _ => 8,
        };
        let mut hex = String::new();
        while hex.len() < digits && cur.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            hex.extend(cur.next());
        }
        hex
    };
    u32::from_str_radix(hex.trim(), 16)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{10000}')
}

/// A Unicode property (after `\p` or `\P`): `\pL` or `\p{…}`, its measured
/// size, plus [`NEGATION`] for `\P` or `!=`.
fn property(cur: &mut Cursor, negated: bool) -> u64 {
    let name = if cur.eat('{') {
        cur.until('}', 64)
    } else {
        cur.next().map(String::from).unwrap_or_default()
    };
    let name: String = name
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-') && !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let (negated, cost) = match name.split_once(['=', ':']) {
        Some((key, value)) => {
            let (key, negated) = match key.strip_suffix('!') {
                Some(key) => (key, !negated),
                None => (key, negated),
            };
            let cost = match key {
                "gc" | "generalcategory" | "sc" | "script" => property_size(value),
                "scx" | "scriptextensions" => property_size(value).saturating_mul(2),
                _ => MAX_PROPERTY,
            };
            (negated, cost.min(MAX_PROPERTY))
        }
        None => (negated, property_size(&name)),
    };
    cost + if negated { NEGATION } else { 0 }
}

/// Measured NFA states of a property (name lower-cased, without spaces,
/// `_` and `-`), rounded up; [`MAX_PROPERTY`] for any other.
fn property_size(name: &str) -> u64 {
    match name {
        "l" | "letter" => 300,
        "lu" | "uppercaseletter" | "upper" | "uppercase" => 80,
        "ll" | "lowercaseletter" | "lower" | "lowercase" => 90,
        "lt" | "titlecaseletter" | "me" | "enclosingmark" => 8,
        "lm" | "modifierletter" => 64,
        "lo" | "otherletter" => 256,
        "lc" | "casedletter" | "cased" => 80,
        "m" | "mark" | "combiningmark" | "mn" | "nonspacingmark" => 176,
        "mc" | "spacingmark" => 88,
        "n" | "number" => 96,
        "nd" | "decimalnumber" | "digit" => 28,
        "nl" | "letternumber" => 20,
        "no" | "othernumber" => 76,
        "p" | "punctuation" | "punct" => 130,
        "pc" | "connectorpunctuation" | "pi" | "initialpunctuation" => 8,
        "pf" | "finalpunctuation" => 8,
        "pd" | "dashpunctuation" | "dash" => 24,
        "ps" | "openpunctuation" | "pe" | "closepunctuation" => 24,
        "po" | "otherpunctuation" => 120,
        "s" | "symbol" => 144,
        "sm" | "mathsymbol" | "math" => 48,
        "sc" | "currencysymbol" | "sk" | "modifiersymbol" => 28,
        "so" | "othersymbol" => 120,
        "z" | "separator" | "zs" | "spaceseparator" => 8,
        "whitespace" | "wspace" | "space" => 8,
        "zl" | "lineseparator" | "zp" | "paragraphseparator" | "cc" | "control" => 4,
        "cf" | "format" => 32,
        "co" | "privateuse" | "any" => 8,
        "ascii" => 1,
        "emoji" => 52,
        "extendedpictographic" | "extpict" => 48,
        "latin" | "latn" => 48,
        "greek" | "grek" | "arabic" | "arab" => 32,
        "cyrillic" | "cyrl" => 24,
        "han" | "hani" => 40,
        "hebrew" | "hebr" => 8,
        "hiragana" | "hira" | "katakana" | "kana" | "hangul" | "hang" => 20,
        "ethiopic" | "ethi" => 20,
        "devanagari" | "deva" | "thai" | "armenian" | "armn" => 12,
        "georgian" | "geor" | "tamil" | "taml" | "bengali" | "beng" => 12,
        "common" | "zyyy" => 120,
        "inherited" | "zinh" | "qaai" => 36,
        "ideographic" | "ideo" => 36,
        "unifiedideograph" | "uideo" | "softdotted" | "sd" => 32,
        "noncharactercodepoint" | "nchar" => 8,
        "defaultignorablecodepoint" | "di" => 28,
        "changeswhencasemapped" | "cwcm" | "changeswhencasefolded" | "cwcf" => 72,
        "changeswhenlowercased" | "cwl" | "changeswhenuppercased" | "cwu" => 72,
        "changeswhentitlecased" | "cwt" => 72,
        "diacritic" | "dia" => 144,
        "graphemeextend" | "grext" => 180,
        "caseignorable" | "ci" => 220,
        _ => MAX_PROPERTY,
    }
}

/// What a class (after its `[`) compiles to: one state for its first byte
/// (all ASCII items), one per lead byte of its two-byte characters, two or
/// three per longer character, what its ranges of non-ASCII characters add
/// ([`range_states`]), the sizes of its properties and Perl classes, and
/// [`NEGATION`] per `^`. Nested classes (the `regex` crate's syntax) are
/// items of the class.
fn class(cur: &mut Cursor, case_insensitive: bool) -> Cost {
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
fn range_states(lo: u32, hi: u32) -> (u64, usize) {
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
fn class_escape(cur: &mut Cursor) -> Result<char, Cost> {
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

/// A `(`: push a group, or set the flags of the current one (`(?i)`). A
/// named back-reference `(?P=name)` is an item instead: its cost.
fn open_group(cur: &mut Cursor, frames: &mut Vec<Frame>, fancy: &mut bool) -> Option<Cost> {
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
fn braces(cur: &mut Cursor) -> Result<(u64, Option<u64>), u64> {
    fn number(cur: &mut Cursor, read: &mut u64) -> Option<u64> {
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

#[cfg(test)]
#[path = "pattern_tests.rs"]
mod tests;
