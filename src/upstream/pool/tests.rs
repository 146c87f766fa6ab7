//! The upstream pool against a real hyper server.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use http_body::Frame;
use http_body_util::BodyExt;
use hyper::{body::Incoming, server::conn::http1 as server, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::*;
use crate::error::ProxyError;

/// A server that counts its connections and answers `/stream` with a
/// body that never ends, anything else with `ok`.
async fn counting_server(close_after_each: bool) -> (String, Arc<AtomicUsize>) {
    let (addr, accepted, close) = closable_server(close_after_each).await;
    // Never closed: the sender lives as long as the test.
    std::mem::forget(close);
    (addr, accepted)
}

/// A counting server whose open connections all close when the returned
/// sender sends, as when the upstream restarts; later ones are served.
async fn closable_server(
    close_after_each: bool,
) -> (String, Arc<AtomicUsize>, tokio::sync::watch::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let (close, closed) = tokio::sync::watch::channel(());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            let mut closed = closed.clone();
            closed.borrow_and_update();
            tokio::spawn(async move {
                let service = service_fn(|req: Request<Incoming>| async move {
                    let body = if req.uri().path() == "/stream" {
                        let chunks = futures_util::stream::unfold(0u64, |n| async move {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            Some((
                                Ok::<_, std::io::Error>(Frame::data(Bytes::from("{}\n"))),
                                n + 1,
                            ))
                        });
                        Body::new(http_body_util::StreamBody::new(chunks))
                    } else {
                        Body::from("ok")
                    };
                    Ok::<_, std::convert::Infallible>(Response::new(body))
                });
                let conn = server::Builder::new()
                    .keep_alive(!close_after_each)
                    .serve_connection(TokioIo::new(stream), service);
                tokio::select! {
                    _ = conn => {}
                    _ = closed.changed() => {}
                }
            });
        }
    });
    (addr, accepted, close)
}

fn get(path: &str) -> Request<Body> {
    Request::get(path)
        .header(http::header::HOST, "upstream")
        .body(Body::empty())
        .unwrap()
}

async fn fetch(pool: &Pool, path: &str) -> Bytes {
    let lease = pool.checkout().await.unwrap();
    let response = lease.send(get(path)).await.ok().unwrap();
    response.into_body().collect().await.unwrap().to_bytes()
}

fn pool_for(addr: String) -> Pool {
    Pool::new(addr, Duration::from_secs(1), Duration::from_secs(60), 8)
}

/// A pool holding `n` idle connections to `addr`, each used once.
async fn pool_with_idle(addr: String, n: usize) -> Pool {
    let pool = Pool::new(addr, Duration::from_secs(1), Duration::from_secs(60), 1024);
    let mut leases = Vec::new();
    for _ in 0..n {
        leases.push(pool.checkout().await.unwrap());
    }
    for lease in leases {
        let response = lease.send(get("/")).await.ok().unwrap();
        response.into_body().collect().await.unwrap();
    }
    pool
}

#[tokio::test]
async fn sequential_requests_reuse_one_connection() {
    let (addr, accepted) = counting_server(false).await;
    let pool = pool_for(addr);
    for _ in 0..20 {
        assert_eq!(fetch(&pool, "/").await, "ok");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_response_dropped_early_closes_its_connection() {
    let (addr, accepted) = counting_server(false).await;
    let pool = pool_for(addr);
    let lease = pool.checkout().await.unwrap();
    let mut body = lease.send(get("/stream")).await.ok().unwrap().into_body();
    assert!(body.frame().await.unwrap().unwrap().is_data());
    drop(body);
    assert_eq!(fetch(&pool, "/").await, "ok");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "the cut stream's connection is not reused"
    );
    assert_eq!(fetch(&pool, "/").await, "ok");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn connections_the_upstream_closed_are_not_reused() {
    let (addr, accepted) = counting_server(true).await;
    let pool = pool_for(addr);
    for _ in 0..5 {
        assert_eq!(fetch(&pool, "/").await, "ok");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn idle_connections_past_their_timeout_are_swept() {
    let (addr, accepted) = counting_server(false).await;
    let pool = Pool::new(addr, Duration::from_secs(1), Duration::from_millis(50), 8);
    assert_eq!(fetch(&pool, "/").await, "ok");
    pool.sweep().await;
    assert_eq!(pool.idle_count(), 1, "a fresh idle connection stays");
    tokio::time::sleep(Duration::from_millis(80)).await;
    pool.sweep().await;
    assert_eq!(pool.idle_count(), 0);
    assert_eq!(fetch(&pool, "/").await, "ok");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refused_connection_is_an_upstream_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    match pool_for(addr.clone()).checkout().await {
        Err(ProxyError::UpstreamUnavailable(detail)) => {
            assert!(detail.contains("cannot connect"), "{detail}");
            // Clients read it: the address is logged, not told.
            assert!(!detail.contains(&addr), "{detail}");
        }
        other => panic!("expected an unavailable upstream, got {:?}", other.err()),
    }
}

#[tokio::test]
async fn a_connection_taken_from_the_pool_is_not_fresh() {
    let (addr, _) = counting_server(false).await;
    let pool = pool_for(addr);
    assert!(pool.checkout().await.unwrap().fresh);
    assert_eq!(fetch(&pool, "/").await, "ok");
    assert!(!pool.checkout().await.unwrap().fresh);
}

#[tokio::test]
async fn after_the_upstream_closed_every_idle_connection_a_new_one_is_opened() {
    // More idle connections than tokio's cooperative budget (128 reads per
    // task poll), so checking them all takes more than one budget.
    const IDLE: usize = 200;
    let (addr, accepted, close) = closable_server(false).await;
    let pool = pool_with_idle(addr, IDLE).await;
    assert_eq!(pool.idle_count(), IDLE);
    close.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let lease = pool.checkout().await.unwrap();
    assert!(lease.fresh, "every idle connection was found closed");
    let response = lease.send(get("/")).await.ok().unwrap();
    assert_eq!(
        response.into_body().collect().await.unwrap().to_bytes(),
        "ok"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), IDLE + 1);
    assert_eq!(pool.idle_count(), 1);
}

#[tokio::test]
async fn the_sweep_closes_idle_connections_the_upstream_closed() {
    let (addr, _, close) = closable_server(false).await;
    let pool = pool_with_idle(addr, 200).await;
    pool.sweep().await;
    assert_eq!(pool.idle_count(), 200, "open connections stay");
    close.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    pool.sweep().await;
    assert_eq!(pool.idle_count(), 0);
}

#[tokio::test]
async fn warming_opens_idle_connections_that_requests_then_take() {
    let (addr, accepted) = counting_server(false).await;
    let pool = Pool::new(addr, Duration::from_secs(1), Duration::from_secs(60), 8);
    assert_eq!(pool.warm(5).await, 5);
    assert_eq!(pool.idle_count(), 5);
    for _ in 0..100 {
        if accepted.load(Ordering::SeqCst) == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 5);
    for _ in 0..3 {
        let lease = pool.checkout().await.unwrap();
        assert!(!lease.fresh, "a warmed connection is taken");
        let req = Request::get("/").body(Body::empty()).unwrap();
        let body = lease.send(req).await.ok().unwrap().into_body();
        body.collect().await.unwrap();
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 5, "no new connection");
    // Never more than the pool keeps idle.
    assert_eq!(pool.warm(100).await, 3);
    assert_eq!(pool.idle_count(), 8);
}

#[tokio::test]
async fn warming_stops_at_an_upstream_that_is_not_up() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap().to_string();
    drop(free);
    let pool = Pool::new(addr, Duration::from_secs(1), Duration::from_secs(60), 1024);
    assert_eq!(pool.warm(1024).await, 0);
    assert_eq!(pool.idle_count(), 0);
}

/// Hold `n` connections at once, each with a request answered, then give
/// them all back.
async fn use_at_once(pool: &Pool, n: usize) {
    let mut leases = Vec::new();
    for _ in 0..n {
        leases.push(pool.checkout().await.unwrap());
    }
    assert_eq!(pool.in_use(), n);
    for lease in leases {
        let response = lease.send(get("/")).await.ok().unwrap();
        response.into_body().collect().await.unwrap();
    }
    assert_eq!(pool.in_use(), 0);
}

#[tokio::test]
async fn topping_up_follows_what_requests_had_in_use_within_the_cap() {
    let (addr, accepted, close) = closable_server(false).await;
    let pool = Pool::new(addr, Duration::from_secs(1), Duration::from_secs(60), 1024);
    let ahead = Ahead { floor: 2, cap: 8 };
    assert_eq!(pool.top_up(ahead).await, 2, "the floor, with no demand yet");
    assert_eq!(pool.top_up(ahead).await, 0, "held ones count");
    use_at_once(&pool, 5).await;
    assert_eq!(pool.idle_count(), 5);
    assert_eq!(pool.top_up(ahead).await, 0, "the pool holds what was used");
    // The upstream closes them all: the next top-up opens what was in use
    // at once since the last one; none was since, so later only the floor.
    use_at_once(&pool, 5).await;
    close.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    pool.sweep().await;
    assert_eq!(pool.idle_count(), 0);
    assert_eq!(pool.top_up(ahead).await, 5);
    assert_eq!(pool.top_up(ahead).await, 0);
    // Never beyond the cap, whatever the demand.
    use_at_once(&pool, 20).await;
    close.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    pool.sweep().await;
    assert_eq!(pool.top_up(ahead).await, 8);
    assert_eq!(pool.idle_count(), 8);
    let opened = accepted.load(Ordering::SeqCst);
    assert_eq!(pool.top_up(Ahead::default()).await, 0, "none ahead: none");
    assert_eq!(accepted.load(Ordering::SeqCst), opened);
}

#[tokio::test]
async fn a_connection_dropped_in_use_is_no_longer_counted() {
    let (addr, _) = counting_server(false).await;
    let pool = pool_for(addr);
    let lease = pool.checkout().await.unwrap();
    assert_eq!(pool.in_use(), 1);
    drop(lease);
    assert_eq!(pool.in_use(), 0);
    let lease = pool.checkout().await.unwrap();
    let mut body = lease.send(get("/stream")).await.ok().unwrap().into_body();
    assert!(body.frame().await.unwrap().unwrap().is_data());
    assert_eq!(pool.in_use(), 1, "a body being read holds its connection");
    drop(body);
    assert_eq!(pool.in_use(), 0);
    assert_eq!(pool.idle_count(), 0);
}

#[test]
fn workers_share_the_connections_opened_ahead() {
    let shares = |floor, cap, workers| -> Vec<Ahead> {
        (0..workers)
            .map(|w| Ahead::share(floor, cap, w, workers))
            .collect()
    };
    let two = shares(4, 16, 2);
    assert_eq!(two, [Ahead { floor: 2, cap: 8 }; 2]);
    let eight = shares(4, 6, 8);
    assert_eq!(eight.iter().map(|a| a.floor).sum::<usize>(), 4);
    assert_eq!(eight.iter().map(|a| a.cap).sum::<usize>(), 6);
    assert!(eight.iter().all(|a| a.floor <= a.cap));
    assert_eq!(
        shares(4, 2, 1),
        [Ahead { floor: 2, cap: 2 }],
        "floor within cap"
    );
    assert_eq!(shares(0, 0, 3), [Ahead::default(); 3]);
}
