//! Where a request may go, as its route says it (see `choose` for the
//! choice), and the headers that steer it.

use http::HeaderName;

use super::pick::Affinity;

/// Names the upstream a request must go to (its configured name).
pub(crate) static X_AUGUR_UPSTREAM: HeaderName = HeaderName::from_static("x-augur-upstream");

/// Names the conversation a request belongs to: its affinity key in place
/// of its prompt's prefix (see `wire::affinity`).
pub(crate) static X_AUGUR_SESSION: HeaderName = HeaderName::from_static("x-augur-session");

/// Where a request may go.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A request naming a model (normalized). `prefer`: the upstream its
    /// capabilities were looked up on, taken when it is healthy and has
    /// the model. `affinity`: the conversation's key, when the model's
    /// policy routes by affinity (else the least loaded).
    Model {
        name: String,
        prefer: Option<usize>,
        affinity: Option<Affinity>,
    },
    /// Any healthy upstream (`/`, `/api/version`, listings of one).
    Any,
    /// The first healthy upstream in the configured order (management
    /// routes and paths augur does not know).
    First,
}
