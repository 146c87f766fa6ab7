//! Character-level JSON scanners for text a model streams: an incremental
//! string unescaper, a raw value pass-through and a balanced object
//! capture. Each consumes one `char` at a time, so input may be split
//! anywhere.

/// Incremental JSON string decoder (after the opening quote).
#[derive(Debug, Default)]
pub(crate) struct Unescaper {
    escape: bool,
    /// Hex digits of a `\u` escape being read.
    hex: Option<(u32, u8)>,
    /// A high surrogate waiting for its low half.
    high: Option<u32>,
}

impl Unescaper {
    /// Decode `c` into `out`; true at the closing quote.
    pub(crate) fn push(&mut self, c: char, out: &mut String) -> bool {
        if let Some((acc, n)) = self.hex {
            match c.to_digit(16) {
                Some(d) if n < 3 => self.hex = Some((acc * 16 + d, n + 1)),
                Some(d) => {
                    self.hex = None;
                    self.unit(acc * 16 + d, out);
                }
                None => {
                    self.hex = None;
                    out.push(char::REPLACEMENT_CHARACTER);
                    return self.push(c, out);
                }
            }
            return false;
        }
        if self.escape {
            self.escape = false;
            if c == 'u' {
                self.hex = Some((0, 0));
                return false;
            }
            self.flush_high(out);
            out.push(unescaped(c));
            return false;
        }
        if c == '\\' {
            self.escape = true;
            return false;
        }
        self.flush_high(out);
        if c == '"' {
            return true;
        }
        out.push(c);
        false
    }

    fn unit(&mut self, u: u32, out: &mut String) {
        match (self.high.take(), u) {
            (Some(h), 0xDC00..=0xDFFF) => {
                let cp = 0x10000 + ((h - 0xD800) << 10) + (u - 0xDC00);
                out.push(char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            (pending, _) => {
                if pending.is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
                match u {
                    0xD800..=0xDBFF => self.high = Some(u),
                    _ => out.push(char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER)),
                }
            }
        }
    }

    fn flush_high(&mut self, out: &mut String) {
        if self.high.take().is_some() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
}

/// The character a one-letter escape (`\n`, `\t`, …) stands for; any
/// other letter stands for itself (`\"`, `\\`, `\/`).
pub(crate) fn unescaped(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'b' => '\u{8}',
        'f' => '\u{c}',
        other => other,
    }
}

/// Step over `c` inside a JSON string, `escape` being whether the last
/// character was an escaping backslash; true at the closing quote.
fn ends_string(escape: &mut bool, c: char) -> bool {
    if *escape {
        *escape = false;
        false
    } else if c == '\\' {
        *escape = true;
        false
    } else {
        c == '"'
    }
}

/// Raw pass-through of one JSON value, dropping whitespace outside strings.
#[derive(Debug, Default)]
pub(crate) struct RawScan {
    depth: usize,
    started: bool,
    in_string: bool,
    escape: bool,
    scalar: bool,
}

impl RawScan {
    /// A bare scalar (number, `true`, …) ends with the output.
    pub(crate) fn complete_at_eof(&self) -> bool {
        self.scalar && !self.in_string && self.depth == 0
    }

    /// Copy `c` to `out` if it belongs to the value; true once complete.
    pub(crate) fn push(&mut self, c: char, out: &mut String) -> bool {
        if self.in_string {
            out.push(c);
            if ends_string(&mut self.escape, c) {
                self.in_string = false;
                return self.depth == 0;
            }
            return false;
        }
        if self.scalar && (c.is_whitespace() || matches!(c, ',' | '}' | ']')) {
            return true;
        }
        if c.is_whitespace() {
            return false;
        }
        out.push(c);
        let first = !self.started;
        self.started = true;
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ if first => self.scalar = true,
            _ => {}
        }
        false
    }
}

/// Capture of one object's text up to its balanced closing brace.
#[derive(Debug)]
pub(crate) struct Capture {
    pub text: String,
    depth: usize,
    in_string: bool,
    escape: bool,
}

impl Capture {
    pub(crate) fn start() -> Capture {
        Capture {
            text: String::from("{"),
            depth: 1,
            in_string: false,
            escape: false,
        }
    }

    /// Append `c`; true when the object is closed.
    pub(crate) fn push(&mut self, c: char) -> bool {
        self.text.push(c);
        if self.in_string {
            if ends_string(&mut self.escape, c) {
                self.in_string = false;
            }
            return false;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}
