//! Policies: the hot-reloadable rules ops edit in `policies/*.yaml`.
//!
//! [`model`] holds the compiled types every request reads; [`rules`]
//! resolves per-model settings from globs.

pub mod model;
pub mod rules;

pub use model::*;
