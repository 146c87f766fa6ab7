//! Connections opened ahead follow demand: a few at start, never more
//! than the upstream's `warm_connections`, and a burst opens only what it
//! needs, also in front of an upstream that serves each connection on a
//! thread of its own (and never accepts more than 5 at once).

use augur::config::Config;

use super::{at_once, config, one_by_one, serve_workers, servers};

/// Requests sent at once.
const BURST: usize = 50;

/// The connections an upstream accepted once augur (two workers, `f`'s
/// config) serves, and after a burst of [`BURST`] requests, all answered.
async fn accepted(f: impl FnOnce(&mut Config)) -> (usize, usize) {
    let upstream = servers::threaded();
    let mut config = config(&upstream.url);
    f(&mut config);
    let augur = serve_workers(config, 2).await;
    let at_start = upstream.seen.accepted();
    assert_eq!(at_once(&augur.url, BURST).await, Vec::<u16>::new());
    assert_eq!(one_by_one(&augur.url, 10).await, Vec::<u16>::new());
    let after = upstream.seen.accepted();
    assert!(
        upstream.seen.peak() <= after,
        "threads: {}",
        upstream.seen.peak()
    );
    (at_start, after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_per_connection_upstream_gets_connections_in_proportion_to_demand() {
    let (at_start, after) = accepted(|_| {}).await;
    // A few at start (4 by default, of at most 16), then what the burst
    // needed: never the 1,024 augur used to open.
    assert_eq!(at_start, 4, "connections opened at start");
    assert!(
        after <= BURST + at_start,
        "{after} connections after a burst of {BURST}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_connections_bounds_what_is_opened_ahead() {
    let (at_start, _) = accepted(|c| c.warm_connections = 2).await;
    assert_eq!(at_start, 2);
    let (at_start, _) = accepted(|c| c.warm_connections = 0).await;
    assert_eq!(at_start, 0, "warm_connections = 0: none ahead");
    // An upstream's own setting wins over the [upstream] table's.
    let (at_start, _) = accepted(|c| {
        c.warm_connections = 0;
        c.upstreams[0].warm_connections = Some(3);
    })
    .await;
    assert_eq!(at_start, 3);
}
