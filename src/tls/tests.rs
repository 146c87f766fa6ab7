//! Loading refuses what cannot be used, naming the file; the accepted
//! versions are rustls' defaults. (Handshakes, ALPN and rotation are
//! tested end to end in `tests/it/tls/`.)

use std::path::Path;

use super::*;

#[test]
fn the_versions_are_tls_1_3_and_1_2_as_rustls_defaults() {
    let ours: Vec<_> = PROTOCOL_VERSIONS.iter().map(|v| v.version).collect();
    let defaults: Vec<_> = rustls::DEFAULT_VERSIONS.iter().map(|v| v.version).collect();
    assert_eq!(ours, defaults);
    assert_eq!(
        ours,
        [
            rustls::ProtocolVersion::TLSv1_3,
            rustls::ProtocolVersion::TLSv1_2
        ]
    );
    assert_eq!(ALPN, [&b"h2"[..], &b"http/1.1"[..]]);
}

fn files(dir: &Path) -> TlsFiles {
    TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

fn load_error(files: &TlsFiles) -> String {
    match ServerTls::load(files, "proxy") {
        Ok(_) => panic!("{files:?} loaded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_missing_or_unreadable_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let e = load_error(&f);
    assert!(e.contains("certificate") && e.contains("cert.pem"), "{e}");
    std::fs::write(&f.cert, "x").unwrap();
    let e = load_error(&f);
    assert!(e.contains("private key") && e.contains("key.pem"), "{e}");
    std::fs::create_dir(&f.key).unwrap();
    let e = load_error(&f);
    assert!(e.contains("key.pem"), "{e}");
}

#[test]
fn files_without_pem_blocks_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    std::fs::write(&f.cert, "not a certificate\n").unwrap();
    std::fs::write(&f.key, "not a key\n").unwrap();
    let e = load_error(&f);
    assert!(
        e.contains("cert.pem") && e.contains("no CERTIFICATE"),
        "{e}"
    );
    let garbage = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
    std::fs::write(&f.cert, garbage).unwrap();
    let e = load_error(&f);
    assert!(e.contains("cert.pem") && e.contains("bad PEM"), "{e}");
    // A well-formed block that is no certificate, and no key at all.
    let bogus = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    std::fs::write(&f.cert, bogus).unwrap();
    let e = load_error(&f);
    assert!(e.contains("key.pem") && e.contains("PRIVATE KEY"), "{e}");
}

#[test]
fn an_oversized_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    std::fs::write(&f.cert, vec![b'a'; 1024 * 1024 + 1]).unwrap();
    let e = load_error(&f);
    assert!(e.contains("cert.pem") && e.contains("larger than"), "{e}");
}
