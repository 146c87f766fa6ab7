//! One test that measures the whole test process, kept out of `tests/it`:
//! a 512 MiB blob upload through augur (to the in-process fake Ollama) may
//! grow this process's resident memory by less than 128 MiB. In the shared
//! integration-test binary every other test's allocations would count too
//! (`/proc/self` is process-wide), so it runs in a process of its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/common/mod.rs"]
mod common;

use common::{client, pair};

#[tokio::test]
async fn a_large_blob_upload_streams_with_bounded_memory() {
    let (fake, augur) = pair().await;
    const CHUNK: usize = 1 << 20;
    const CHUNKS: usize = 512;
    let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
    let block = vec![42u8; CHUNK];
    for _ in 0..CHUNKS {
        sha2::Digest::update(&mut hasher, &block);
    }
    let digest = format!("sha256:{}", hex::encode(sha2::Digest::finalize(hasher)));
    let before = rss_kib();
    let stream = futures_util::stream::iter(
        (0..CHUNKS).map(move |_| Ok::<_, std::io::Error>(vec![42u8; CHUNK])),
    );
    let r = client()
        .post(format!("{}/api/blobs/{digest}", augur.url))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(fake.blob_bytes(), (CHUNK * CHUNKS) as u64);
    let grown_mib = (rss_kib().saturating_sub(before)) / 1024;
    assert!(
        grown_mib < 128,
        "512 MiB upload grew memory by {grown_mib} MiB"
    );
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap()
}
