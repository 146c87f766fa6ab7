//! Escapes and character classes: what [`Translator`] emits for `\…`
//! outside a class and for `[…]`, as GBNF character classes.

use super::translator::{DIGIT, SPACE, Translator, WORD, push_class_char};

impl Translator {
    /// An escape outside a class, emitted as a one-character class so that
    /// a following quantifier applies to it alone.
    pub(super) fn escape(&mut self) -> Result<(), String> {
        let Some(c) = self.peek() else {
            return Err("trailing backslash".into());
        };
        self.pos += 1;
        let class = match c {
            'd' => format!("[{DIGIT}]"),
            'D' => format!("[^{DIGIT}]"),
            'w' => format!("[{WORD}]"),
            'W' => format!("[^{WORD}]"),
            's' => format!("[{SPACE}]"),
            'S' => format!("[^{SPACE}]"),
            _ => {
                let ch = self.escaped_char(c)?;
                let mut s = String::from("[");
                push_class_char(&mut s, ch, true);
                s.push(']');
                s
            }
        };
        self.out.push_str(&class);
        Ok(())
    }

    /// The character an escape (other than a shorthand class) stands for.
    fn escaped_char(&mut self, c: char) -> Result<char, String> {
        Ok(match c {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'f' => '\u{0C}',
            'v' => '\u{0B}',
            '0' => '\0',
            'x' => self.hex(2)?,
            'u' => self.hex(4)?,
            c if c.is_ascii_alphanumeric() => {
                return Err(format!("unsupported escape \\{c}"));
            }
            c => c,
        })
    }

    fn hex(&mut self, n: usize) -> Result<char, String> {
        let digits: String = self.chars.iter().skip(self.pos).take(n).collect();
        if digits.len() != n || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err("invalid hex escape".into());
        }
        self.pos += n;
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| "invalid hex escape".to_string())
    }

    /// A `[...]` class; `pos` is just after `[`.
    pub(super) fn class(&mut self) -> Result<(), String> {
        let mut body = String::new();
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut items = 0usize;
        loop {
            let Some(c) = self.peek() else {
                return Err("unbalanced square brackets".into());
            };
            self.pos += 1;
            match c {
                ']' if items > 0 => break,
                ']' => return Err("empty character class".into()),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err("trailing backslash".into());
                    };
                    self.pos += 1;
                    match e {
                        'd' => body.push_str(DIGIT),
                        'w' => body.push_str(WORD),
                        's' => body.push_str(SPACE),
                        'D' | 'W' | 'S' => {
                            return Err(format!("\\{e} inside a character class"));
                        }
                        'b' => push_class_char(&mut body, '\u{08}', true),
                        _ => {
                            let ch = self.escaped_char(e)?;
                            push_class_char(&mut body, ch, true);
                        }
                    }
                }
                '-' => {
                    // A range dash only between two items and before ']'.
                    let is_range =
                        items > 0 && !body.ends_with('-') && self.peek().is_some_and(|n| n != ']');
                    if is_range {
                        body.push('-');
                        continue;
                    }
                    body.push_str("\\x2D");
                }
                c => push_class_char(&mut body, c, true),
            }
            items += 1;
        }
        self.out.push('[');
        if negated {
            self.out.push('^');
        }
        self.out.push_str(&body);
        self.out.push(']');
        Ok(())
    }
}
