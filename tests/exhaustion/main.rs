//! No request may exhaust augur: each test runs the real binary and bounds
//! what an attack costs it (descriptors, CPU time, resident memory).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod connections;
