//! Requests over HTTPS, HTTP/1.1 and HTTP/2 as ALPN chooses, through to
//! the fake Ollama; TLS 1.0 and 1.1 refused, 1.2 and 1.3 accepted.

use std::{process::Stdio, time::Duration};

use fake_ollama::FakeOllama;
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::common::{
    certs::{Ca, KeyKind},
    https, ndjson,
};

const H2: &[u8] = b"h2";
const H1: &[u8] = b"http/1.1";

fn chat(stream: bool) -> serde_json::Value {
    json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}], "stream": stream})
}

#[tokio::test]
async fn https_serves_http1_and_http2_as_alpn_chooses() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let leaf = ca.leaf("a", "localhost", KeyKind::Rsa);
    let fake = FakeOllama::builder().start().await;
    let (augur, tls) = super::serve_tls(&fake.url(), &super::files(&leaf), |_, _| {}).await;
    assert!(tls.last_error().is_none());
    type Offer<'a> = (&'a [&'a [u8]], Option<&'a [u8]>);
    let offers: [Offer; 4] = [
        (&[H2, H1], Some(H2)),
        (&[H2], Some(H2)),
        (&[H1], Some(H1)),
        (&[], None),
    ];
    for (offer, chosen) in offers {
        let config = https::client_config(&ca.pem, offer);
        let mut conn = https::connect(augur.addr, config).await.unwrap();
        assert_eq!(conn.alpn.as_deref(), chosen, "offer {offer:?}");
        assert_eq!(conn.peer, https::cert_der(&leaf.cert));
        let version = conn.ok("GET", "/api/version", None).await.unwrap();
        assert!(version.json()["version"].is_string());
        // The same connection carries the next requests.
        let answer = conn.ok("POST", "/api/chat", Some(&chat(false))).await;
        let answer = answer.unwrap().json();
        assert_eq!(answer["message"]["role"], "assistant", "{answer}");
        assert_eq!(answer["done"], true);
        let streamed = conn
            .ok("POST", "/api/chat", Some(&chat(true)))
            .await
            .unwrap();
        let lines = ndjson(std::str::from_utf8(&streamed.body).unwrap());
        assert!(lines.len() > 2, "{lines:?}");
        assert_eq!(lines.last().unwrap()["done"], true);
        let seen = fake.last_request_to("/api/chat").unwrap();
        assert_eq!(seen.headers["x-forwarded-proto"], "https");
    }
    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(augur.addr).await.unwrap();
    plain
        .write_all(b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut answer)).await;
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
    augur.stop().await;
}

/// A ClientHello for `version` (0x0301 TLS 1.0, 0x0302 TLS 1.1) without
/// the supported_versions extension, as a client of that version sends.
fn legacy_client_hello(version: u16) -> Vec<u8> {
    let mut body = version.to_be_bytes().to_vec();
    body.extend_from_slice(&[7u8; 32]); // random
    body.push(0); // no session id
    body.extend_from_slice(&[0, 4, 0x00, 0x2f, 0xc0, 0x13]); // two CBC suites
    body.extend_from_slice(&[1, 0]); // null compression
    // signature_algorithms: ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256,
    // rsa_pkcs1_sha256 (rustls wants the extension before anything else).
    let sig_algs = [0x00, 0x0d, 0, 8, 0, 6, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01];
    body.extend_from_slice(&(sig_algs.len() as u16).to_be_bytes());
    body.extend_from_slice(&sig_algs);
    let mut handshake = vec![1, 0]; // client_hello, 24-bit length
    handshake.extend_from_slice(&(body.len() as u16).to_be_bytes());
    handshake.extend_from_slice(&body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}

/// `openssl s_client` against `port` with `args`: its exit status and
/// everything it printed.
async fn s_client(port: u16, ca: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = tokio::process::Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", "localhost", "-CAfile"])
        .arg(ca)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("openssl must be installed (apt-get install openssl)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn only_tls_1_2_and_1_3_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let leaf = ca.leaf("a", "localhost", KeyKind::EcP256);
    let fake = FakeOllama::builder().start().await;
    let (augur, _tls) = super::serve_tls(&fake.url(), &super::files(&leaf), |_, _| {}).await;
    let port = augur.addr.port();
    // A TLS 1.0 or 1.1 ClientHello gets a fatal protocol_version alert.
    for version in [0x0301u16, 0x0302] {
        let mut s = TcpStream::connect(augur.addr).await.unwrap();
        s.write_all(&legacy_client_hello(version)).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        assert_eq!(answer.first(), Some(&0x15), "an alert record: {answer:?}");
        assert_eq!(&answer[5..7], [2, 70], "fatal protocol_version: {answer:?}");
    }
    // openssl's own TLS 1.1 client (allowed to try at security level 0)
    // sends its hello and gets an alert: no cipher, no session.
    let (ok, text) = s_client(port, &ca.pem, &["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]).await;
    assert!(!ok, "{text}");
    assert!(text.contains("Cipher is (NONE)"), "{text}");
    assert!(text.contains("SSL alert number"), "{text}");
    // TLS 1.2 and 1.3 complete, verify against the CA, and negotiate h2.
    for (flag, name) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
        let (ok, text) = s_client(port, &ca.pem, &[flag, "-alpn", "h2,http/1.1"]).await;
        assert!(ok, "{text}");
        assert!(text.contains(name), "{text}");
        assert!(text.contains("ALPN protocol: h2"), "{text}");
        assert!(text.contains("Verify return code: 0 (ok)"), "{text}");
    }
    augur.stop().await;
}
