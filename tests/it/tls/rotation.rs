//! Certificates replaced on disk while clients keep making requests: no
//! request fails, open connections keep their session, new handshakes get
//! the new certificate; a bad replacement leaves the old one in use.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use fake_ollama::FakeOllama;
use serde_json::json;

use crate::common::{
    self,
    certs::{Ca, KeyKind, Leaf},
    https,
};

/// Publish `leaf` in `secret` as Kubernetes updates a mounted secret: the
/// files go into a new directory `version`, and the `..data` symlink is
/// swapped to it in one rename (`tls.crt` and `tls.key` point through it).
fn publish(secret: &Path, version: &str, leaf: &Leaf) {
    let dir = secret.join(version);
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&leaf.cert, dir.join("tls.crt")).unwrap();
    std::fs::copy(&leaf.key, dir.join("tls.key")).unwrap();
    let tmp = secret.join("..data_tmp");
    std::os::unix::fs::symlink(version, &tmp).unwrap();
    std::fs::rename(&tmp, secret.join("..data")).unwrap();
}

/// What one client loop did.
#[derive(Default, Debug)]
struct Tally {
    ok: u64,
    after_swap: u64,
    errors: Vec<String>,
}

/// Requests on one kept-alive connection until `stop`, alternating
/// `/api/version` and `/api/chat`.
async fn keep_asking(
    mut conn: https::Conn,
    swapped: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Tally {
    let chat = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}], "stream": false});
    let mut tally = Tally::default();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let result = if i.is_multiple_of(2) {
            conn.ok("POST", "/api/chat", Some(&chat)).await
        } else {
            conn.ok("GET", "/api/version", None).await
        };
        match result {
            Ok(_) if swapped.load(Ordering::Relaxed) => {
                tally.ok += 1;
                tally.after_swap += 1;
            }
            Ok(_) => tally.ok += 1,
            Err(e) => tally.errors.push(e),
        }
    }
    tally
}

#[tokio::test]
async fn rotation_under_load_fails_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let old = ca.leaf("old", "localhost", KeyKind::Rsa);
    let new = ca.leaf("new", "augur rotated", KeyKind::EcP256);
    let (old_der, new_der) = (https::cert_der(&old.cert), https::cert_der(&new.cert));
    let secret = dir.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    publish(&secret, "..v1", &old);
    std::os::unix::fs::symlink("..data/tls.crt", secret.join("tls.crt")).unwrap();
    std::os::unix::fs::symlink("..data/tls.key", secret.join("tls.key")).unwrap();
    let files = augur::config::TlsFiles {
        cert: secret.join("tls.crt"),
        key: secret.join("tls.key"),
    };
    let fake = FakeOllama::builder().start().await;
    let (augur, tls) = super::serve_tls(&fake.url(), &files, |_, _| {}).await;
    let (h2, h1) = (
        https::client_config(&ca.pem, &[b"h2"]),
        https::client_config(&ca.pem, &[b"http/1.1"]),
    );
    let (swapped, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let mut loops = Vec::new();
    for i in 0..8 {
        let config = if i % 2 == 0 { h2.clone() } else { h1.clone() };
        let conn = https::connect(augur.addr, config).await.unwrap();
        assert_eq!(conn.peer, old_der);
        loops.push(tokio::spawn(keep_asking(
            conn,
            swapped.clone(),
            stop.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    publish(&secret, "..v2", &new);
    swapped.store(true, Ordering::Relaxed);
    let swap = Instant::now();
    // New connections, one after another, until one gets the new
    // certificate; each must succeed whichever it gets.
    let mut fresh = 0;
    let switched = loop {
        let mut conn = https::connect(augur.addr, h1.clone()).await.unwrap();
        conn.ok("GET", "/api/version", None).await.unwrap();
        fresh += 1;
        if conn.peer == new_der {
            break swap.elapsed();
        }
        assert_eq!(conn.peer, old_der);
        assert!(swap.elapsed() < Duration::from_secs(10), "never switched");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // From then on every new handshake gets the new certificate.
    for _ in 0..5 {
        let mut conn = https::connect(augur.addr, h2.clone()).await.unwrap();
        assert_eq!(conn.peer, new_der);
        conn.ok("GET", "/api/version", None).await.unwrap();
        fresh += 1;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut total, mut after, mut errors) = (0, 0, Vec::new());
    for l in loops {
        let tally = l.await.unwrap();
        assert!(
            tally.after_swap > 0,
            "a connection stopped serving: {tally:?}"
        );
        total += tally.ok;
        after += tally.after_swap;
        errors.extend(tally.errors);
    }
    eprintln!(
        "rotation: {total} requests on 8 kept-alive connections (4 h2, 4 http/1.1), \
         {after} of them after the swap; {fresh} new connections; new certificate \
         served {} ms after the swap; {} failed",
        switched.as_millis(),
        errors.len()
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(tls.last_error().is_none());
    augur.stop().await;
}

#[tokio::test]
async fn a_bad_replacement_keeps_the_certificate_in_use() {
    let metrics = common::metrics();
    let rejected = |m: &metrics_exporter_prometheus::PrometheusHandle| {
        common::metric(
            &m.render(),
            "augur_tls_reloads_total",
            &["outcome=\"rejected\""],
        )
    };
    let rejected_before = rejected(&metrics);
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let a = ca.leaf("a", "localhost", KeyKind::EcP256);
    let b = ca.leaf("b", "localhost b", KeyKind::EcP256);
    let live = dir.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let files = augur::config::TlsFiles {
        cert: live.join("cert.pem"),
        key: live.join("key.pem"),
    };
    std::fs::copy(&a.cert, &files.cert).unwrap();
    std::fs::copy(&a.key, &files.key).unwrap();
    let fake = FakeOllama::builder().start().await;
    let (augur, tls) = super::serve_tls(&fake.url(), &files, |_, _| {}).await;
    let config = https::client_config(&ca.pem, &[b"h2", b"http/1.1"]);
    let a_der = https::cert_der(&a.cert);
    let fingerprint = tls.fingerprint();
    let serves = |der: Vec<u8>| {
        let config = config.clone();
        async move {
            let mut conn = https::connect(augur.addr, config).await.unwrap();
            conn.ok("GET", "/api/version", None).await.unwrap();
            assert_eq!(conn.peer, der);
        }
    };

    // A key that belongs to another certificate.
    super::replace_file(&b.key, &files.key);
    let mismatch = || {
        tls.last_error()
            .is_some_and(|e| e.contains("does not match"))
    };
    assert!(super::eventually(Duration::from_secs(10), mismatch).await);
    serves(a_der.clone()).await;
    // Then a certificate file that is no certificate.
    std::fs::write(&files.cert, "not a certificate\n").unwrap();
    let garbage = || {
        tls.last_error()
            .is_some_and(|e| e.contains("no CERTIFICATE"))
    };
    assert!(super::eventually(Duration::from_secs(10), garbage).await);
    serves(a_der.clone()).await;
    assert_eq!(tls.fingerprint(), fingerprint);
    assert!(rejected(&metrics) >= rejected_before + 2.0);

    // The matching certificate completes the pair: it is loaded.
    super::replace_file(&b.cert, &files.cert);
    let loaded = || tls.last_error().is_none() && tls.fingerprint() != fingerprint;
    assert!(super::eventually(Duration::from_secs(10), loaded).await);
    serves(https::cert_der(&b.cert)).await;
    augur.stop().await;
}
