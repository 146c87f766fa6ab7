//! The integration tests: one test binary, one module per area (each was a
//! test binary of its own; linking ~50 copies of the crate graph made
//! `target/` huge). Run one area with a name filter, e.g.
//! `cargo test --test it -- perfect_model::` (the module path prefixes
//! every test name).
//!
//! Every module shares one process, so what is process-wide is shared:
//! - the Prometheus recorder: installed once by [`common::metrics`]; a test
//!   that reads a metric names labels of its own (an upstream, a model, a
//!   key) or compares against the value it read before;
//! - signals: `policy_reload::sighup_forces_a_reload` sends SIGHUP to this
//!   process, which forces one reload in every live policy watcher of any
//!   module (same files, same policy); the tests that count compiles hold
//!   `policy_reload::SIGNALS`.
//!
//! - the process's own figures: the one test that measures this process
//!   (its resident memory during a 512 MiB upload) is a binary of its own,
//!   `tests/memory.rs`, that shares `common` by path.
//!
//! Nothing here sets environment variables, resource limits or a global
//! tracing subscriber in-process; tests that need those run the `augur`
//! binary as a child process (`common::process`, `common::augur_bin`).
//! `traces` installs its trace layer for one test's thread only (a scoped
//! subscriber): requests of other tests make no spans, and their trace
//! headers pass upstream untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod admission;
mod architecture;
mod auth;
mod binary;
mod bypass;
mod cache;
mod cache_kept;
mod concurrency;
mod confidence;
mod docs;
mod endings;
mod exhaustion;
mod fair_queue;
mod fallback;
mod fallback_failures;
mod faults;
mod format_degrade;
mod format_normalize;
mod format_policies;
mod format_repair;
mod format_retry;
mod format_sanitize;
mod format_stream;
mod format_strings;
mod genai_metrics;
mod guard_paths;
mod hung_upstream;
mod length;
mod lifecycle;
mod listing_faults;
mod log_lines;
mod messages;
mod native_tools;
mod overhead;
mod perfect_model;
mod policy_edits;
mod policy_reload;
mod policy_special_files;
mod proxy;
mod rate_limits;
mod record;
mod replay;
mod response_format;
mod responses;
mod retry_feedback;
mod routing_affinity;
mod scopes;
mod shared_limits;
mod status;
mod text_calls;
mod text_mode;
mod thinking;
mod tls;
mod token_budgets;
mod tool_grounding;
mod tool_guard;
mod tool_guard_reading;
mod tool_loops;
mod tool_placeholders;
mod tool_policies;
mod tool_unrelated;
mod tools;
mod traces;
mod truncation;
mod upstream_connections;
mod upstream_dns;
mod upstream_failover;
mod upstreams;

/// Cargo builds only the test targets named in Cargo.toml (`autotests =
/// false`): a new file at the top of `tests/` would never run. Tests go in
/// a module here instead.
#[test]
fn every_integration_test_is_a_module_of_this_binary() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let declared: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("path = \"tests/"))
        .filter_map(|l| l.strip_suffix('"'))
        .collect();
    let mut strays = Vec::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let target = if path.is_dir() {
            format!("{name}/main.rs")
        } else {
            name
        };
        let is_target = (path.is_dir() && path.join("main.rs").exists())
            || path.extension().is_some_and(|e| e == "rs");
        if is_target && !declared.contains(&target.as_str()) {
            strays.push(format!("tests/{target}"));
        }
    }
    assert!(
        strays.is_empty(),
        "not built by cargo (autotests = false): {strays:?}; \
         make them modules of tests/it/main.rs"
    );
}
