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
//!
//! A response-cache hit reports the counts recorded with its answer (1.),
//! or, under `cache.charge_hits: false`, is waived: it charges nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(crate) use crate::telemetry::genai::Counts;

/// Token counts reported for one request, shared by the stages that make
/// upstream calls and the body that charges the budget.
#[derive(Debug, Default)]
pub struct Usage {
    input: AtomicU64,
    output: AtomicU64,
    /// Ollama's `eval_duration` summed, and whether any call reported one.
    eval_ns: AtomicU64,
    eval_any: AtomicBool,
    any: AtomicBool,
    /// Estimated prompt tokens, from the request body's size.
    prompt_estimate: AtomicU64,
    /// Nothing is charged: the answer cost the upstream nothing and the
    /// policy does not charge for it (a cache hit without `charge_hits`).
    waived: AtomicBool,
    /// The answer is a replay (a cache hit): no upstream generated it.
    replayed: AtomicBool,
}

impl Usage {
    /// A meter for a request whose body is `body_len` bytes.
    pub fn for_body(body_len: usize) -> Self {
        let u = Self::default();
        u.prompt_estimate
            .store(estimate_from_bytes(body_len), Ordering::Relaxed);
        u
    }

    /// Record the counts of one answer, as the upstream reported them.
    pub fn report(&self, counts: Counts) {
        self.input.fetch_add(counts.input, Ordering::Relaxed);
        self.output.fetch_add(counts.output, Ordering::Relaxed);
        if let Some(ns) = counts.eval_ns {
            self.eval_ns.fetch_add(ns, Ordering::Relaxed);
            self.eval_any.store(true, Ordering::Relaxed);
        }
        self.any.store(true, Ordering::Relaxed);
    }

    /// The tokens (prompt plus generated) reported so far, if any were.
    pub fn reported(&self) -> Option<u64> {
        self.counts().map(|c| c.input + c.output)
    }

    /// The counts reported so far, if any were.
    pub fn counts(&self) -> Option<Counts> {
        self.any.load(Ordering::Relaxed).then(|| Counts {
            input: self.input.load(Ordering::Relaxed),
            output: self.output.load(Ordering::Relaxed),
            eval_ns: self
                .eval_any
                .load(Ordering::Relaxed)
                .then(|| self.eval_ns.load(Ordering::Relaxed)),
        })
    }

    /// The estimated prompt tokens.
    pub fn prompt_estimate(&self) -> u64 {
        self.prompt_estimate.load(Ordering::Relaxed)
    }

    /// Charge nothing for this request.
    pub fn waive(&self) {
        self.waived.store(true, Ordering::Relaxed);
    }

    /// Mark the answer a replay: the GenAI metrics leave it out.
    pub fn replayed(&self) {
        self.replayed.store(true, Ordering::Relaxed);
    }

    /// Whether the answer is a replay.
    pub fn is_replayed(&self) -> bool {
        self.replayed.load(Ordering::Relaxed)
    }

    /// Whether nothing is charged for this request.
    pub fn is_waived(&self) -> bool {
        self.waived.load(Ordering::Relaxed)
    }
}

/// One token per four bytes, rounded up.
pub(crate) fn estimate_from_bytes(len: usize) -> u64 {
    (len as u64).div_ceil(4)
}

/// Prompt and generated tokens from the end of an Ollama, OpenAI or
/// Anthropic answer; `None` when the text carries no counts.
pub(crate) fn counts_in(tail: &[u8]) -> Option<Counts> {
    let finders = &*FINDERS;
    let last = |key: Key| -> Option<u64> { last_count(tail, &finders[key as usize]) };
    let pair = |input: Key, output: Key| -> Option<Counts> {
        let (i, o) = (last(input), last(output));
        (i.is_some() || o.is_some()).then(|| Counts {
            input: i.unwrap_or(0),
            output: o.unwrap_or(0),
            eval_ns: None,
        })
    };
    if let Some(ollama) = pair(Key::PromptEvalCount, Key::EvalCount) {
        let eval_ns = last(Key::EvalDuration);
        return Some(Counts { eval_ns, ..ollama });
    }
    pair(Key::PromptTokens, Key::CompletionTokens)
        // Anthropic's usage.
        .or_else(|| pair(Key::InputTokens, Key::OutputTokens))
}

/// The fields [`counts_in`] reads, in [`KEYS`]' order.
#[derive(Clone, Copy)]
enum Key {
    PromptEvalCount,
    EvalCount,
    EvalDuration,
    PromptTokens,
    CompletionTokens,
    InputTokens,
    OutputTokens,
}

const KEYS: [&str; 7] = [
    "\"prompt_eval_count\":",
    "\"eval_count\":",
    "\"eval_duration\":",
    "\"prompt_tokens\":",
    "\"completion_tokens\":",
    "\"input_tokens\":",
    "\"output_tokens\":",
];

/// A searcher per key, built once: this runs at the end of every answer.
static FINDERS: std::sync::LazyLock<Vec<memchr::memmem::FinderRev<'static>>> =
    std::sync::LazyLock::new(|| KEYS.iter().map(memchr::memmem::FinderRev::new).collect());

/// The number after the last `finder`'s key in `tail` (the counts are
/// ASCII: searched as bytes, from the end).
fn last_count(tail: &[u8], finder: &memchr::memmem::FinderRev<'_>) -> Option<u64> {
    let i = finder.rfind(tail)?;
    let rest = &tail[i + finder.needle().len()..];
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let digits = &rest[start..];
    let end = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
