//! What one request cost in tokens, for its token budgets.
//!
//! The budget is charged once, when the response ends or the client leaves.
//! In order of preference, the charge is:
//!
//! 1. the counts the upstream reported for every call augur made on the
//!    request's behalf (retries included), recorded by the pipeline with
//!    [`Usage::report`];
//! 2. the counts at the end of a forwarded answer (Ollama's
//!    `prompt_eval_count + eval_count`, OpenAI's `usage`);
//! 3. an estimate: the prompt at one token per four bytes of the request
//!    body, plus one token per streamed chunk (or per four bytes of a whole
//!    answer).
//!
//! A client that leaves early is charged at least the estimate for what it
//! sent and what it was sent: the upstream did that work.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Token counts reported for one request, shared by the stages that make
/// upstream calls and the body that charges the budget.
#[derive(Debug, Default)]
pub struct Usage {
    reported: AtomicU64,
    any: AtomicBool,
    /// Estimated prompt tokens, from the request body's size.
    prompt_estimate: AtomicU64,
}

impl Usage {
    /// A meter for a request whose body is `body_len` bytes.
    pub fn for_body(body_len: usize) -> Self {
        let u = Self::default();
        u.prompt_estimate
            .store(estimate_from_bytes(body_len), Ordering::Relaxed);
        u
    }

    /// Record `tokens` (prompt plus generated) reported by the upstream.
    pub fn report(&self, tokens: u64) {
        self.reported.fetch_add(tokens, Ordering::Relaxed);
        self.any.store(true, Ordering::Relaxed);
    }

    /// The counts reported so far, if any were.
    pub fn reported(&self) -> Option<u64> {
        self.any
            .load(Ordering::Relaxed)
            .then(|| self.reported.load(Ordering::Relaxed))
    }

    /// The estimated prompt tokens.
    pub fn prompt_estimate(&self) -> u64 {
        self.prompt_estimate.load(Ordering::Relaxed)
    }
}

/// One token per four bytes, rounded up.
pub(crate) fn estimate_from_bytes(len: usize) -> u64 {
    (len as u64).div_ceil(4)
}

/// Prompt plus generated tokens from the end of an Ollama or OpenAI answer;
/// `None` when the text carries no counts.
pub(crate) fn counts_in(tail: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(tail);
    let last = |key: &str| -> Option<u64> {
        let i = text.rfind(key)?;
        let digits: String = text[i + key.len()..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let ollama = (last("\"prompt_eval_count\":"), last("\"eval_count\":"));
    if ollama.0.is_some() || ollama.1.is_some() {
        return Some(ollama.0.unwrap_or(0) + ollama.1.unwrap_or(0));
    }
    let openai = (last("\"prompt_tokens\":"), last("\"completion_tokens\":"));
    if openai.0.is_some() || openai.1.is_some() {
        return Some(openai.0.unwrap_or(0) + openai.1.unwrap_or(0));
    }
    // Anthropic's usage.
    let anthropic = (last("\"input_tokens\":"), last("\"output_tokens\":"));
    if anthropic.0.is_some() || anthropic.1.is_some() {
        return Some(anthropic.0.unwrap_or(0) + anthropic.1.unwrap_or(0));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_the_done_chunk_or_usage() {
        let done = br#"{"done":true,"prompt_eval_count":26,"prompt_eval_duration":3,"eval_count":282,"eval_duration":4}"#;
        assert_eq!(counts_in(done), Some(308));
        let usage = br#"{"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;
        assert_eq!(counts_in(usage), Some(12));
        let anthropic = br#"{"usage":{"input_tokens":3,"output_tokens":4}}"#;
        assert_eq!(counts_in(anthropic), Some(7));
        assert_eq!(counts_in(b"{}"), None);
        assert_eq!(counts_in(br#"{"eval_count":0}"#), Some(0));
    }

    #[test]
    fn reports_add_up_over_retries() {
        let u = Usage::for_body(101);
        assert_eq!(u.prompt_estimate(), 26);
        assert_eq!(u.reported(), None);
        u.report(10);
        u.report(15);
        assert_eq!(u.reported(), Some(25));
    }
}
