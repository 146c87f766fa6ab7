//! No input may exhaust augur: each test runs the real binary in front of
//! the fake Ollama and bounds what an attack costs the process (descriptors,
//! CPU time, resident memory, read from `/proc`; see `common::process`), not
//! how long it takes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod caches;
mod connections;
mod offload;
mod policies;
mod schemas;
