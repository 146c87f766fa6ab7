//! Resource exhaustion against the real `augur` binary: what hostile or
//! careless inputs cost the process in CPU time and memory, read from
//! `/proc` (see `common::process`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod policies;
