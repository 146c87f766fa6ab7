//! Output validation: compiled-once validators and JSON Schema violations.
//!
//! [`Validators`] compiles each distinct schema once (keyed by the SHA-256 of
//! its canonical JSON, weighed by the memory it holds compiled, see
//! [`weight()`], against one memory budget, see [`set_cache_budget`]) after
//! checking it against the schema budget ([`crate::schema::budget`]), and
//! reports [`Violation`]s with JSON pointers into the instance, with bounded
//! work ([`Compiled::check`]). A schema that cannot be compiled is refused
//! ([`SchemaRejected`]), never taken as constraining nothing. Repair of
//! model output lives in [`repair`] and [`coerce`].

mod cache;
pub(crate) mod coerce;
mod compiled;
pub(crate) mod repair;
mod text;
mod violation;
mod weight;

#[cfg(test)]
mod tests;

pub(crate) use cache::settle;
pub use cache::{Validators, admit, cache_budget, schema_key, set_cache_budget, values_key};
pub use coerce::coerce_to_schema;
pub use compiled::{Compiled, MAX_VIOLATIONS, MAX_WORK, SchemaRejected, compile, options};
pub use repair::{RepairOutcome, parse_and_repair, retry_feedback};
pub use violation::{Checked, Violation, format_violations};
pub use weight::{value_bytes, weight};
