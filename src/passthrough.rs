//! passthrough
