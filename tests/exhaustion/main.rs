//! Resource exhaustion: requests built to make augur burn CPU or hold
//! memory, sent to the real binary in front of the fake Ollama. Each test
//! checks what augur answers and bounds what it costs the process (CPU
//! time and resident memory read from /proc), not how long it takes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod caches;
#[path = "../common/mod.rs"]
mod common;
mod schemas;
