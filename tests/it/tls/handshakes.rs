//! Handshakes run off the accept loop and are bounded: a client that
//! stalls in the handshake, or after it, is disconnected and frees its
//! connection slot, while other clients are served meanwhile.

use std::time::{Duration, Instant};

use fake_ollama::FakeOllama;
use rustls::pki_types::ServerName;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::common::{
    self,
    certs::{Ca, KeyKind},
    https,
};

/// How long the peer took to close `s`, if it did within `within`.
async fn closed_after<S: tokio::io::AsyncRead + Unpin>(
    s: &mut S,
    within: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within.saturating_sub(start.elapsed()), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn stalled_handshakes_are_bounded_and_block_no_one() {
    let metrics = common::metrics();
    let timeouts = |m: &metrics_exporter_prometheus::PrometheusHandle| {
        common::metric(
            &m.render(),
            "augur_tls_handshake_failures_total",
            &["reason=\"timeout\""],
        )
    };
    let timeouts_before = timeouts(&metrics);
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let leaf = ca.leaf("a", "localhost", KeyKind::EcP256);
    let fake = FakeOllama::builder().start().await;
    let mut slots = None;
    let (augur, _tls) = super::serve_tls(&fake.url(), &super::files(&leaf), |config, accept| {
        config.max_connections = 4;
        accept.slots = std::sync::Arc::new(tokio::sync::Semaphore::new(4));
        accept.header_timeout = Duration::from_secs(1);
        accept.handshake_timeout = Duration::from_secs(3);
        slots = Some(accept.slots.clone());
    })
    .await;
    let slots = slots.unwrap();
    let config = https::client_config(&ca.pem, &[b"h2", b"http/1.1"]);

    // Two clients start a handshake (a record header promising 512 bytes)
    // and send nothing more.
    let mut stalled = Vec::new();
    let opened = Instant::now();
    for _ in 0..2 {
        let mut s = TcpStream::connect(augur.addr).await.unwrap();
        s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).await.unwrap();
        stalled.push(s);
    }
    // Meanwhile another client is served at once, well before the stalled
    // handshakes time out.
    let served = tokio::time::timeout(Duration::from_secs(2), async {
        let mut conn = https::connect(augur.addr, config.clone()).await.unwrap();
        conn.ok("GET", "/api/version", None).await.unwrap();
    });
    served
        .await
        .expect("a client waited behind stalled handshakes");
    for s in &mut stalled {
        let closed = closed_after(s, Duration::from_secs(8)).await;
        assert!(closed.is_some(), "a stalled handshake was never closed");
        let after = opened.elapsed();
        assert!(
            after > Duration::from_millis(2500),
            "closed early: {after:?}"
        );
    }
    assert!(timeouts(&metrics) >= timeouts_before + 2.0);

    // A client that completes the handshake and then sends no request is
    // closed after the header timeout, as on a plain connection.
    let tcp = TcpStream::connect(augur.addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut silent = tokio_rustls::TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .unwrap();
    let after = closed_after(&mut silent, Duration::from_secs(5)).await;
    let after = after.expect("a silent TLS client was never closed");
    assert!(after >= Duration::from_millis(800), "{after:?}");

    // Every slot is free again (the accept loop holds one for the next
    // connection), and a new client is served.
    assert!(super::eventually(Duration::from_secs(3), || slots.available_permits() == 3).await);
    let mut conn = https::connect(augur.addr, config).await.unwrap();
    conn.ok("GET", "/api/version", None).await.unwrap();
    augur.stop().await;
}
