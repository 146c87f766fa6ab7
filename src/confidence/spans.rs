//! Where each value of a JSON text sits: the byte span of every string,
//! number, boolean and null, with its path of keys and indices. Keys and
//! punctuation are left out: under a grammar they are forced, and their
//! probabilities say nothing of what the model chose.

/// Deepest nesting read; deeper values are not scored.
const MAX_DEPTH: usize = 32;
/// Most values read, and most objects.
const MAX_LEAVES: usize = 4_096;

/// One step of a value's path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// A scalar value and its bytes: a string's content (an empty string's
/// closing quote: closing it at once was the model's choice), or a
/// number's, boolean's or null's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leaf {
    pub path: Vec<Step>,
    pub start: usize,
    pub end: usize,
}

/// What was read of a JSON text: its scalar values, and the objects that
/// closed (an object cut off by the end of the text is not among them).
#[derive(Debug, Default)]
pub(crate) struct Spans {
    pub leaves: Vec<Leaf>,
    /// Each complete object's path and bytes, braces included.
    pub objects: Vec<Leaf>,
}

/// The leaves of the first JSON value in `text` (leading text skipped);
/// as many as were read when the text is cut or malformed.
pub(crate) fn leaves(text: &str) -> Vec<Leaf> {
    scan(text).leaves
}

/// The leaves and complete objects of the first JSON value in `text`.
pub(crate) fn scan(text: &str) -> Spans {
    let bytes = text.as_bytes();
    let Some(start) = bytes.iter().position(|b| *b == b'{' || *b == b'[') else {
        return Spans::default();
    };
    let mut scan = Scan {
        bytes,
        at: start,
        path: Vec::new(),
        out: Spans::default(),
    };
    scan.value(0);
    scan.out
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    path: Vec<Step>,
    out: Spans,
}

impl Scan<'_> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(b) = self.bytes.get(self.at) {
            if !b.is_ascii_whitespace() {
                return Some(*b);
            }
            self.at += 1;
        }
        None
    }

    /// Read one value; false when the text ends or breaks off.
    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH || self.out.leaves.len() >= MAX_LEAVES {
            return false;
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => match self.string() {
                Some((start, end)) => self.leaf(start, end),
                None => false,
            },
            Some(_) => {
                let start = self.at;
                while let Some(b) = self.bytes.get(self.at) {
                    if matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace() {
                        break;
                    }
                    self.at += 1;
                }
                self.at > start && self.leaf(start, self.at)
            }
            None => false,
        }
    }

    fn leaf(&mut self, start: usize, end: usize) -> bool {
        self.out.leaves.push(Leaf {
            path: self.path.clone(),
            start,
            end,
        });
        true
    }

    /// A string at `self.at`: the span of its content (of its closing
    /// quote when empty); `self.at` after the string.
    fn string(&mut self) -> Option<(usize, usize)> {
        self.at += 1;
        let start = self.at;
        while let Some(b) = self.bytes.get(self.at) {
            match b {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    let end = (self.at - 1).max(start + 1);
                    return Some((start, end));
                }
                _ => self.at += 1,
            }
        }
        None
    }

    fn object(&mut self, depth: usize) -> bool {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    if self.out.objects.len() < MAX_LEAVES {
                        self.out.objects.push(Leaf {
                            path: self.path.clone(),
                            start,
                            end: self.at,
                        });
                    }
                    return true;
                }
                Some(b',') => self.at += 1,
                Some(b'"') => {
                    let Some((start, _)) = self.string() else {
                        return false;
                    };
                    let key = String::from_utf8_lossy(&self.bytes[start..self.at - 1]).into_owned();
                    if self.peek() != Some(b':') {
                        return false;
                    }
                    self.at += 1;
                    self.path.push(Step::Key(key));
                    let ok = self.value(depth + 1);
                    self.path.pop();
                    if !ok {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.at += 1;
        let mut index = 0;
        loop {
            match self.peek() {
                Some(b']') => {
                    self.at += 1;
                    return true;
                }
                Some(b',') => self.at += 1,
                Some(_) => {
                    self.path.push(Step::Index(index));
                    let ok = self.value(depth + 1);
                    self.path.pop();
                    if !ok {
                        return false;
                    }
                    index += 1;
                }
                None => return false,
            }
        }
    }
}
