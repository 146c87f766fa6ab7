//! Auth, rate, token and concurrency limits for the request path.
//!
//! [`Limits`] holds every counter, outside the swapped [`Policy`] snapshot:
//! the snapshot says *which* quotas apply, `Limits` remembers how much of
//! each is spent. Counters are keyed by scope and quota, so a reload keeps
//! the state of unchanged quotas and starts changed ones fresh.
//!
//! # Request path
//!
//! ```text
//! let policy = store.snapshot();                      // once per request
//! if route.needs_key() {                              // all but GET/HEAD /
//!     principal = limits.authenticate(&policy, &headers, ip)?;   // 401
//! }
//! let name = normalize_model_name(raw);               // once per request
//! check_model(&policy, &principal, &name)?;           // 403, every named model
//! let model_policy = policy.models.resolve_normalized(&name);
//! let admission = limits
//!     .admit(&policy, &principal, Some((&name, &model_policy)), route.counts(), estimate)
//!     .await?;                                        // 429, 503
//! // forward; keep `admission` alive until the response body is finished
//! admission.charge_tokens(tokens);                    // see `usage`
//! ```
//!
//! On error answer `err.status()`, `{"error": err.message()}` and
//! `err.headers()`. On success `admission.rate_headers()` may be attached.
//!
//! # Scopes
//!
//! * per principal (key id, else client IP): the key's own `rate_limit`, else
//!   `defaults.rate_limit` (requests and `tokens_per_minute`);
//! * per (principal, model): `models.<glob>.rate_limit`, for the normalized
//!   model name;
//! * per model, all principals: `concurrency` (see [`concurrency`]), with
//!   a queue fair across principals (see [`fair`]).
//!
//! # Stores
//!
//! Request rates and token budgets live in this process ([`rate`],
//! [`tokens`]) or, with `[limits] store = "redis://…"`, in Redis or Valkey
//! shared by every replica ([`shared`]). The shared store checks and
//! consumes every bucket of a request in one atomic call (a refusal
//! consumes nothing), reserves the prompt estimate from token budgets at
//! admission and settles the difference after the answer (a refund when
//! the answer cost less), and applies a reload's new numbers to the
//! existing state. When it cannot answer, the policy's
//! `limits.on_store_error` counts the request in this replica's own
//! buckets (`allow`: each replica then holds the limits on its own) or
//! refuses with 503 (`deny`). Concurrency is always counted per replica.
//!
//! Call [`Limits::housekeeping`] every minute or so to forget idle keys.

pub(crate) mod auth;
pub(crate) mod concurrency;
pub(crate) mod error;
pub(crate) mod fair;
mod limiter;
pub(crate) mod rate;
pub(crate) mod shared;
mod status;
mod tokens;
pub(crate) mod usage;

pub(crate) use auth::{Principal, check_model, check_scope, scopes};
pub(crate) use concurrency::Permit;
pub(crate) use error::LimitError;
pub(crate) use limiter::{Admission, Limits};
pub(crate) use usage::Usage;

#[cfg(test)]
mod tests;
