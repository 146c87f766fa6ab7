//! The token log-probabilities an upstream returned (Ollama's `logprobs`:
//! `[{"token", "logprob", "bytes"?, "top_logprobs"?: [...]}]`), read
//! within bounds, and where each token sits in the text they spell.

use serde_json::Value;

/// Most tokens read from one answer; past it the answer's confidence is
/// unknown (an answer that long is not scored token by token).
pub(crate) const MAX_TOKENS: usize = 16_384;
/// Most alternatives kept per token.
const MAX_ALTERNATIVES: usize = 3;
/// Longest token text kept (a token is a few bytes; anything longer is
/// not one).
const MAX_TOKEN_BYTES: usize = 256;

/// One generated token and the model's probability for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    /// The token's text (a token that is part of a character shows it
    /// replaced).
    pub text: String,
    bytes: Vec<u8>,
    pub logprob: f64,
    /// The most likely tokens at this position (`top_logprobs`), the
    /// sampled one among them when it was.
    pub alternatives: Vec<(String, f64)>,
}

impl Token {
    /// The token's probability.
    pub(crate) fn prob(&self) -> f64 {
        self.logprob.exp()
    }
}

/// The tokens of one answer, in order, and the text they spell.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tokens {
    items: Vec<Token>,
    /// Byte range of each token in `bytes`.
    ranges: Vec<(usize, usize)>,
    /// The tokens' bytes, joined (a character may span two tokens).
    bytes: Vec<u8>,
    /// More tokens came than [`MAX_TOKENS`], or one was unreadable.
    overflow: bool,
}

impl Tokens {
    /// Add the tokens of one `logprobs` array (a whole answer's, or one
    /// stream chunk's). Anything not shaped as Ollama writes it marks the
    /// answer as unscored rather than guessed.
    pub(crate) fn extend(&mut self, logprobs: &Value) {
        let Some(items) = logprobs.as_array() else {
            self.overflow = true;
            return;
        };
        for item in items {
            if self.items.len() >= MAX_TOKENS {
                self.overflow = true;
                return;
            }
            match read_token(item) {
                Some(token) => self.push(token),
                None => {
                    self.overflow = true;
                    return;
                }
            }
        }
    }

    fn push(&mut self, token: Token) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&token.bytes);
        self.ranges.push((start, self.bytes.len()));
        self.items.push(token);
    }

    /// Whether any token was read and none was lost.
    pub(crate) fn usable(&self) -> bool {
        !self.items.is_empty() && !self.overflow
    }

    /// The text the tokens spell, when it is text (byte offsets into it
    /// are the tokens' own).
    pub(crate) fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }

    /// The tokens overlapping bytes `start..end` of [`Tokens::text`].
    pub(crate) fn within(&self, start: usize, end: usize) -> impl Iterator<Item = &Token> {
        self.items
            .iter()
            .zip(&self.ranges)
            .filter(move |(_, (s, e))| *s < end && *e > start)
            .map(|(t, _)| t)
    }

    /// The tokens that spell part of a letter or a digit (a token holding
    /// part of a character counts with the character).
    pub(crate) fn words(&self) -> impl Iterator<Item = &Token> {
        let text = self.text().unwrap_or_default();
        self.items
            .iter()
            .zip(&self.ranges)
            .filter(move |(_, (s, e))| {
                text.get(floor(text, *s)..ceil(text, *e))
                    .is_some_and(|t| t.chars().any(char::is_alphanumeric))
            })
            .map(|(t, _)| t)
    }
}

/// `i` moved back to a character boundary of `text`.
fn floor(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `i` moved on to a character boundary of `text`.
fn ceil(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// One `{"token", "logprob", "bytes"?, "top_logprobs"?}` object. Its
/// bytes are `bytes` when given (a token may be part of a character),
/// else the text of `token`.
fn read_token(item: &Value) -> Option<Token> {
    let logprob = item.get("logprob")?.as_f64()?;
    let bytes = token_bytes(item)?;
    let alternatives = item
        .get("top_logprobs")
        .and_then(Value::as_array)
        .map(|alts| {
            alts.iter()
                .take(MAX_ALTERNATIVES)
                .filter_map(|a| {
                    let text = String::from_utf8_lossy(&token_bytes(a)?).into_owned();
                    Some((text, a.get("logprob")?.as_f64()?.min(0.0)))
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Token {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        bytes,
        logprob: logprob.min(0.0),
        alternatives,
    })
}

fn token_bytes(item: &Value) -> Option<Vec<u8>> {
    let bytes = match item.get("bytes").and_then(Value::as_array) {
        Some(bytes) if bytes.len() <= MAX_TOKEN_BYTES => bytes
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()?,
        Some(_) => return None,
        None => item.get("token")?.as_str()?.as_bytes().to_vec(),
    };
    (bytes.len() <= MAX_TOKEN_BYTES).then_some(bytes)
}
