//! The text side of the nesting pre-scan: moving through characters and
//! line breaks as the YAML tokenizer counts them, and skipping what holds
//! no nesting — blanks, comments, quoted, plain and block scalars.

use super::scan::{Refusal, Scan};

impl Scan<'_> {
    pub(super) fn at(&self, i: usize) -> u8 {
        self.b.get(self.pos + i).copied().unwrap_or(0)
    }

    /// Byte length of the line break at `pos + i`, or 0.
    pub(super) fn brk(&self, i: usize) -> usize {
        let rest = self.b.get(self.pos + i..).unwrap_or(&[]);
        match rest {
            [b'\r', b'\n', ..] => 2,
            [b'\r' | b'\n', ..] => 1,
            // NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR break lines too.
            [0xC2, 0x85, ..] => 2,
            [0xE2, 0x80, 0xA8 | 0xA9, ..] => 3,
            _ => 0,
        }
    }

    pub(super) fn blank(&self, i: usize) -> bool {
        matches!(self.at(i), b' ' | b'\t')
    }

    pub(super) fn blankz(&self, i: usize) -> bool {
        self.blank(i) || self.brk(i) > 0 || self.pos + i >= self.b.len()
    }

    pub(super) fn eof(&self) -> bool {
        self.pos >= self.b.len()
    }

    /// Move past one character (or one line break).
    pub(super) fn advance(&mut self) {
        let n = self.brk(0);
        if n > 0 {
            self.pos += n;
            self.line += 1;
            self.col = 0;
            return;
        }
        self.pos += 1;
        while self.pos < self.b.len() && self.b[self.pos] & 0xC0 == 0x80 {
            self.pos += 1;
        }
        self.col += 1;
    }

    pub(super) fn syntax(&self, what: &'static str) -> Refusal {
        Refusal::Syntax {
            line: self.line,
            what,
        }
    }

    /// Skip blanks, comments and line breaks up to the next token.
    pub(super) fn skip_to_token(&mut self) {
        loop {
            if self.col == 0 && self.b[self.pos..].starts_with("\u{feff}".as_bytes()) {
                self.pos += 3;
            }
            while self.at(0) == b' '
                || (self.at(0) == b'\t' && (self.in_flow() || !self.key_allowed))
            {
                self.advance();
            }
            if self.at(0) == b'#' {
                while !self.eof() && self.brk(0) == 0 {
                    self.advance();
                }
            }
            if self.brk(0) == 0 {
                return;
            }
            self.advance();
            if !self.in_flow() {
                self.key_allowed = true;
            }
        }
    }

    pub(super) fn document_marker(&self) -> bool {
        self.col == 0
            && (self.b[self.pos..].starts_with(b"---") || self.b[self.pos..].starts_with(b"..."))
            && self.blankz(3)
    }

    pub(super) fn plain_can_start(&self, c: u8) -> bool {
        let indicator = matches!(
            c,
            b'-' | b'?'
                | b':'
                | b','
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'#'
                | b'&'
                | b'*'
                | b'!'
                | b'|'
                | b'>'
                | b'\''
                | b'"'
                | b'%'
                | b'@'
                | b'`'
        );
        !(self.blankz(0) || indicator)
            || (c == b'-' && !self.blank(1))
            || (!self.in_flow() && matches!(c, b'?' | b':') && !self.blankz(1))
    }

    /// A quoted scalar, to its closing quote (across lines).
    pub(super) fn quoted(&mut self, quote: u8) {
        self.advance();
        while !self.eof() {
            let c = self.at(0);
            let escape = (quote == b'\'' && c == b'\'' && self.at(1) == b'\'')
                || (quote == b'"' && c == b'\\');
            if escape {
                // '' in single quotes, \x in double quotes: skip both.
                self.advance();
            } else if c == quote {
                self.advance();
                return;
            }
            self.advance();
        }
    }

    /// A plain scalar: in the block context it may go on over more
    /// indented lines; in the flow context it ends at a flow indicator.
    /// `Ok(true)` when it ended after a line break (a key may follow).
    pub(super) fn plain(&mut self) -> Result<bool, Refusal> {
        let min_col = self.indents.last().map_or(0, |top| top.col + 1);
        let mut leading = false;
        loop {
            if self.document_marker() || self.at(0) == b'#' {
                return Ok(leading);
            }
            while !self.blankz(0) {
                let c = self.at(0);
                if self.in_flow() && c == b':' && b",?[]{}".contains(&self.at(1)) {
                    return Err(self.syntax("unexpected ':' in a plain scalar"));
                }
                if (c == b':' && self.blankz(1))
                    || (self.in_flow() && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    return Ok(leading);
                }
                leading = false;
                self.advance();
            }
            if !(self.blank(0) || self.brk(0) > 0) {
                return Ok(leading);
            }
            while self.blank(0) || self.brk(0) > 0 {
                if self.brk(0) > 0 {
                    leading = true;
                } else if leading && self.col < min_col && self.at(0) == b'\t' {
                    return Err(self.syntax("a tab character violates indentation"));
                }
                self.advance();
            }
            if !self.in_flow() && self.col < min_col {
                return Ok(leading);
            }
        }
    }

    /// A literal (`|`) or folded (`>`) block scalar: its header, then every
    /// line indented at least as far as its content.
    pub(super) fn block_scalar(&mut self) -> Result<(), Refusal> {
        self.advance();
        let mut increment = 0;
        for _ in 0..2 {
            match self.at(0) {
                b'+' | b'-' => self.advance(),
                d @ b'1'..=b'9' if increment == 0 => {
                    increment = usize::from(d - b'0');
                    self.advance();
                }
                b'0' => return Err(self.syntax("a block scalar indentation indicator is 0")),
                _ => {}
            }
        }
        while self.blank(0) {
            self.advance();
        }
        if self.at(0) == b'#' {
            while !self.eof() && self.brk(0) == 0 {
                self.advance();
            }
        }
        if self.eof() {
            return Ok(());
        }
        if self.brk(0) == 0 {
            return Err(self.syntax("a block scalar header must end its line"));
        }
        self.advance();
        let parent = self.indents.last().map(|b| b.col);
        let mut indent = if increment > 0 {
            parent.unwrap_or(0) + increment
        } else {
            0
        };
        // Leading empty lines, and the first content line's indentation.
        let mut widest = 0;
        self.block_breaks(indent)?;
        loop {
            widest = widest.max(self.col);
            if self.brk(0) == 0 {
                break;
            }
            self.advance();
            self.block_breaks(indent)?;
        }
        if indent == 0 {
            indent = widest.max(parent.map_or(0, |p| p + 1)).max(1);
        }
        while self.col == indent && !self.eof() {
            while !self.eof() && self.brk(0) == 0 {
                self.advance();
            }
            if self.eof() {
                return Ok(());
            }
            self.advance();
            self.block_breaks(indent)?;
            while self.brk(0) > 0 {
                self.advance();
                self.block_breaks(indent)?;
            }
        }
        Ok(())
    }

    /// Indentation spaces of a block scalar line (up to `indent`, or all
    /// while the indentation is not known yet).
    pub(super) fn block_breaks(&mut self, indent: usize) -> Result<(), Refusal> {
        while (indent == 0 || self.col < indent) && self.at(0) == b' ' {
            self.advance();
        }
        if (indent == 0 || self.col < indent) && self.at(0) == b'\t' {
            return Err(self.syntax("a tab character where an indentation space is expected"));
        }
        Ok(())
    }
}
