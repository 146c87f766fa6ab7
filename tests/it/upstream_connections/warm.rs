//! Connections opened ahead follow demand: a few at start, never more
//! than the upstream's `warm_connections`, and a burst opens only what it
//! needs, also in front of an upstream that serves each connection on a
//! thread of its own (and never accepts more than 5 at once).

use std::{sync::Arc, time::Duration};

use augur::config::Config;

use super::{
    at_once, config, one_by_one, serve_workers,
    servers::{self, Seen},
};
use crate::common;

/// Requests sent at once.
const BURST: usize = 50;

/// The connections an upstream accepted once augur (two workers, `f`'s
/// config) serves, `at_start` expected, and after a burst of [`BURST`]
/// requests, all answered: what the upstream saw.
async fn accepted(at_start: usize, f: impl FnOnce(&mut Config)) -> Arc<Seen> {
    let upstream = servers::threaded();
    let mut config = config(&upstream.url);
    f(&mut config);
    let augur = serve_workers(config, 2).await;
    // The upstream's accept thread may lag behind the handshakes.
    let seen = &upstream.seen;
    common::until(Duration::from_secs(10), || seen.accepted() >= at_start).await;
    // A request takes a connection opened ahead, or opens the only one.
    assert_eq!(one_by_one(&augur.url, 1).await, Vec::<u16>::new());
    assert_eq!(seen.accepted(), at_start.max(1), "connections at start");
    assert_eq!(at_once(&augur.url, BURST).await, Vec::<u16>::new());
    assert_eq!(one_by_one(&augur.url, 10).await, Vec::<u16>::new());
    upstream.seen.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_per_connection_upstream_gets_connections_in_proportion_to_demand() {
    // A few at start (4 by default, of at most 16), then what the burst
    // needed: never the 1,024 augur used to open.
    let seen = accepted(4, |_| {}).await;
    let after = seen.accepted();
    assert!(
        after <= BURST + 4,
        "{after} connections after a burst of {BURST}"
    );
    assert!(seen.peak() <= BURST + 4, "{} threads at once", seen.peak());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_connections_bounds_what_is_opened_ahead() {
    accepted(2, |c| c.warm_connections = 2).await;
    // None ahead: the first request opens the first connection.
    accepted(0, |c| c.warm_connections = 0).await;
    // An upstream's own setting wins over the [upstream] table's.
    accepted(3, |c| {
        c.warm_connections = 0;
        c.upstreams[0].warm_connections = Some(3);
    })
    .await;
}
