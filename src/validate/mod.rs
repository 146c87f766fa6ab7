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
pub use cache::{Validators, set_cache_budget};
pub(crate) use cache::{admit, cache_budget, values_key};
pub use coerce::coerce_to_schema;
#[cfg(test)]
pub(crate) use compiled::options;
pub(crate) use compiled::{Compiled, SchemaRejected};
pub use compiled::{MAX_VIOLATIONS, compile};
pub(crate) use repair::parse_and_repair;
pub(crate) use violation::{Violation, format_violations};
