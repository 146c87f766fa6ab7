//! No input may exhaust augur: each test runs the real binary and bounds
//! what an attack costs the process (descriptors, CPU time, resident
//! memory, read from `/proc`; see `common::process`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod connections;
mod policies;
