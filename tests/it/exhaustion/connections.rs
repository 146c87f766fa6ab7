//! Connections that send nothing are closed after the header timeout, and
//! a flood of them holds at most `max_connections` descriptors.

use std::time::{Duration, Instant};

use fake_ollama::FakeOllama;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::common::{
    client,
    process::{Process, Start},
};

const CONFIG: &str = "[server]\nclient_header_timeout_ms = 1000\nmax_connections = 50\n";

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

/// Whether the peer closed `s` within `within`.
async fn closed(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(within, s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn idle_connections_are_closed_after_the_header_timeout() {
    let fake = FakeOllama::builder().start().await;
    let augur = Process::start(Start {
        upstream: &fake.url(),
        config: Some(CONFIG),
        ..Start::default()
    })
    .await;
    let port = port_of(&augur.url);
    let before = augur.open_files();
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(TcpStream::connect(("127.0.0.1", port)).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        augur.open_files() <= before + 50 + 5,
        "at most max_connections held: {} open, {before} before",
        augur.open_files()
    );
    // Each accepted connection is closed a second after it was accepted;
    // the ones waiting in the backlog get their turn as slots free up.
    let started = Instant::now();
    for s in &mut idle {
        assert!(
            closed(s, Duration::from_secs(10)).await,
            "an idle connection stayed open"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    // A keep-alive connection left idle after a request is closed too.
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    assert!(
        closed(&mut s, Duration::from_secs(3)).await,
        "idle keep-alive stayed open"
    );
    // Real requests are served throughout.
    let r = client()
        .get(format!("{}/api/version", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(augur.open_files() <= before + 5, "descriptors returned");
}

#[tokio::test]
async fn a_request_is_served_while_idle_connections_hold_every_slot() {
    let fake = FakeOllama::builder().start().await;
    let augur = Process::start(Start {
        upstream: &fake.url(),
        config: Some(CONFIG),
        ..Start::default()
    })
    .await;
    let port = port_of(&augur.url);
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(TcpStream::connect(("127.0.0.1", port)).await.unwrap());
    }
    let started = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        client().get(format!("{}/api/version", augur.url)).send(),
    )
    .await
    .expect("served within 10 s")
    .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
