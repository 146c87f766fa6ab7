//! NDJSON line splitting: bytes in, as they arrive from the network, and
//! complete lines out, the same lines however the bytes were chunked.
//!
//! Pure and bounded: a line longer than the limit is an error (reported
//! once; the splitter then yields nothing more), whether it arrives whole
//! or in pieces, so one endless line cannot grow the buffer without end.
//! Blank lines (only ASCII whitespace) are skipped.

use bytes::{Bytes, BytesMut};

/// A line over the splitter's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an NDJSON line is longer than {limit} bytes")]
pub struct LineTooLong {
    /// The limit, in bytes (without the newline).
    pub limit: usize,
}

/// Splits a byte stream into newline-terminated lines.
///
/// ```
/// use augur::inputs::LineSplitter;
///
/// let mut s = LineSplitter::new(1024);
/// s.push(b"{\"a\":1}\n{\"b\"");
/// assert_eq!(s.next_line().unwrap().unwrap(), &b"{\"a\":1}"[..]);
/// assert!(s.next_line().is_none());
/// s.push(b":2}\n");
/// assert_eq!(s.next_line().unwrap().unwrap(), &b"{\"b\":2}"[..]);
/// assert!(s.finish().is_none());
/// ```
#[derive(Debug)]
pub struct LineSplitter {
    /// Bytes not yet returned, starting at the beginning of a line.
    buf: BytesMut,
    /// How many bytes at the start of `buf` are known to hold no newline.
    scanned: usize,
    max_line: usize,
    /// A line was too long: nothing more is returned.
    failed: bool,
}

impl LineSplitter {
    /// A splitter that accepts lines of at most `max_line` bytes (without
    /// the newline).
    pub fn new(max_line: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            scanned: 0,
            max_line,
            failed: false,
        }
    }

    /// Add the next bytes of the stream.
    pub fn push(&mut self, data: &[u8]) {
        if !self.failed {
            self.buf.extend_from_slice(data);
        }
    }

    /// The next complete, non-blank line, without its `\n`; `None` until
    /// more bytes are pushed. A line over the limit is an error once, then
    /// `None` for good.
    pub fn next_line(&mut self) -> Option<Result<Bytes, LineTooLong>> {
        while !self.failed {
            let Some(offset) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') else {
                self.scanned = self.buf.len();
                return (self.buf.len() > self.max_line).then(|| self.fail());
            };
            let end = self.scanned + offset;
            if end > self.max_line {
                return Some(self.fail());
            }
            let mut line = self.buf.split_to(end + 1);
            line.truncate(end);
            self.scanned = 0;
            if !is_blank(&line) {
                return Some(Ok(line.freeze()));
            }
        }
        None
    }

    /// At the end of the stream: the last line if it had no `\n` (and is
    /// not blank). Call after [`LineSplitter::next_line`] returned `None`;
    /// the splitter is empty afterwards.
    pub fn finish(&mut self) -> Option<Result<Bytes, LineTooLong>> {
        if let Some(item) = self.next_line() {
            return Some(item);
        }
        if self.failed {
            return None;
        }
        let rest = self.buf.split().freeze();
        self.scanned = 0;
        (!is_blank(&rest)).then_some(Ok(rest))
    }

    /// Bytes held: the start of a line not complete yet (and any complete
    /// lines not taken).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    fn fail(&mut self) -> Result<Bytes, LineTooLong> {
        self.failed = true;
        self.buf = BytesMut::new();
        self.scanned = 0;
        Err(LineTooLong {
            limit: self.max_line,
        })
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
#[path = "splitter_tests.rs"]
mod tests;
