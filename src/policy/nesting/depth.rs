//! The structure side of the nesting pre-scan: flow brackets, block
//! indentation, keys and sequence entries, each level counted against the
//! limit.

use super::scan::{Block, Flow, MAX_SIMPLE_KEY, Refusal, Scan};

/// Check that `text` nests at most `max` levels; `Ok(depth)` is the
/// deepest level reached (an upper bound of the parsed value's depth).
pub(crate) fn check(text: &str, max: usize) -> Result<usize, Refusal> {
    let mut scan = Scan {
        b: text.as_bytes(),
        pos: 0,
        line: 1,
        col: 0,
        flow: Vec::new(),
        indents: Vec::new(),
        implicit: 0,
        key_allowed: true,
        key: None,
        max,
        deepest: 0,
    };
    scan.run()?;
    Ok(scan.deepest)
}

impl Scan<'_> {
    pub(super) fn in_flow(&self) -> bool {
        !self.flow.is_empty()
    }

    pub(super) fn deeper(&mut self) -> Result<(), Refusal> {
        let depth = self.indents.len() + self.flow.len() + self.implicit;
        self.deepest = self.deepest.max(depth);
        if depth > self.max {
            return Err(Refusal::TooDeep { line: self.line });
        }
        Ok(())
    }

    /// A block collection starts at `col` unless one is open there already.
    pub(super) fn roll(&mut self, col: usize, mapping: bool) -> Result<(), Refusal> {
        if self.in_flow() {
            return Ok(());
        }
        match self.indents.last_mut() {
            Some(top) if top.col >= col => {
                if top.col == col && top.mapping && !mapping && !top.indentless {
                    top.indentless = true;
                    self.implicit += 1;
                    self.deeper()?;
                }
            }
            _ => {
                self.indents.push(Block {
                    col,
                    mapping,
                    indentless: false,
                });
                self.deeper()?;
            }
        }
        Ok(())
    }

    /// Close the block collections indented deeper than `col`.
    pub(super) fn unroll(&mut self, col: usize) {
        while let Some(top) = self.indents.last().copied() {
            if top.col <= col {
                break;
            }
            self.pop_block();
        }
    }

    pub(super) fn pop_block(&mut self) {
        if self.indents.pop().is_some_and(|b| b.indentless) {
            self.implicit -= 1;
        }
    }

    /// A `key: value` pair directly in a flow sequence.
    pub(super) fn flow_pair(&mut self) -> Result<(), Refusal> {
        if let Some(top) = self.flow.last_mut()
            && top.sequence
            && !top.pair
        {
            top.pair = true;
            self.implicit += 1;
            self.deeper()?;
        }
        Ok(())
    }

    pub(super) fn save_key(&mut self) {
        if self.key_allowed && !self.in_flow() {
            self.key = Some((self.line, self.pos, self.col));
        }
    }

    pub(super) fn run(&mut self) -> Result<(), Refusal> {
        loop {
            self.skip_to_token();
            if self.eof() {
                return Ok(());
            }
            if !self.in_flow() {
                self.unroll(self.col);
            }
            let c = self.at(0);
            if self.col == 0 && c == b'%' {
                // A directive: its line holds nothing that nests.
                while !self.indents.is_empty() {
                    self.pop_block();
                }
                self.key = None;
                self.key_allowed = false;
                while !self.eof() && self.brk(0) == 0 {
                    self.advance();
                }
                continue;
            }
            if self.document_marker() {
                while !self.indents.is_empty() {
                    self.pop_block();
                }
                self.key = None;
                self.key_allowed = false;
                for _ in 0..3 {
                    self.advance();
                }
                continue;
            }
            self.token(c)?;
        }
    }

    pub(super) fn token(&mut self, c: u8) -> Result<(), Refusal> {
        match c {
            b'[' | b'{' => {
                self.save_key();
                self.flow.push(Flow {
                    sequence: c == b'[',
                    pair: false,
                });
                self.deeper()?;
                self.key_allowed = true;
                self.advance();
            }
            b']' | b'}' => {
                if self.flow.pop().is_some_and(|f| f.pair) {
                    self.implicit -= 1;
                }
                self.key_allowed = false;
                self.advance();
            }
            b',' => {
                self.key_allowed = true;
                self.advance();
            }
            b'-' if self.blankz(1) => {
                if !self.in_flow() {
                    if !self.key_allowed {
                        return Err(self.syntax("block sequence entries are not allowed here"));
                    }
                    self.roll(self.col, false)?;
                    self.key = None;
                }
                self.key_allowed = true;
                self.advance();
            }
            b'?' if self.in_flow() || self.blankz(1) => {
                if self.in_flow() {
                    self.flow_pair()?;
                } else {
                    if !self.key_allowed {
                        return Err(self.syntax("mapping keys are not allowed here"));
                    }
                    self.roll(self.col, true)?;
                    self.key = None;
                }
                self.key_allowed = !self.in_flow();
                self.advance();
            }
            b':' if self.in_flow() || self.blankz(1) => {
                let key = if self.in_flow() {
                    self.flow_pair()?;
                    None
                } else {
                    self.key.take()
                };
                match key {
                    Some((line, pos, col))
                        if line == self.line && pos + MAX_SIMPLE_KEY >= self.pos =>
                    {
                        self.roll(col, true)?;
                        self.key_allowed = false;
                    }
                    _ if self.in_flow() || self.key_allowed => {
                        self.roll(self.col, true)?;
                        self.key_allowed = !self.in_flow();
                    }
                    _ => return Err(self.syntax("mapping values are not allowed here")),
                }
                self.advance();
            }
            b'*' | b'&' => {
                self.save_key();
                self.key_allowed = false;
                self.advance();
                let start = self.pos;
                while self.at(0).is_ascii_alphanumeric() || matches!(self.at(0), b'_' | b'-') {
                    self.advance();
                }
                if self.pos == start {
                    return Err(self.syntax("an anchor or alias needs a name"));
                }
            }
            b'!' => return Err(self.syntax("YAML tags are not supported in policy files")),
            b'|' | b'>' if !self.in_flow() => {
                self.key = None;
                self.block_scalar()?;
                self.key_allowed = true;
            }
            b'\'' | b'"' => {
                self.save_key();
                self.quoted(c);
                self.key_allowed = false;
            }
            _ if self.plain_can_start(c) => {
                self.save_key();
                self.key_allowed = self.plain()?;
            }
            _ => return Err(self.syntax("found a character that cannot start any token")),
        }
        Ok(())
    }
}
