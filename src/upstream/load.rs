//! The load of one upstream: its requests in flight, each counted by a
//! guard that lives as long as the request (and its response body).

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

/// The load of one upstream, shared by its in-flight guards.
pub(crate) struct Load {
    pub(crate) in_flight: AtomicU64,
    pub(crate) gauge: metrics::Gauge,
    pub(crate) requests: metrics::Counter,
    pub(crate) errors: metrics::Counter,
}

/// One request in flight to an upstream, counted until dropped (with the
/// response body, when the request got one).
pub(crate) struct InFlight(pub(crate) Arc<Load>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.gauge.decrement(1.0);
    }
}
