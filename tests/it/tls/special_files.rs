//! A FIFO (or a symlink to one) where a certificate or key file should
//! be: refused at start with a message naming it, never waited on; put in
//! place of a certificate in use, it is refused like any bad replacement,
//! the certificate in use stays, and the next good pair is loaded.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use fake_ollama::FakeOllama;

use crate::common::{
    augur_bin,
    certs::{Ca, KeyKind},
    https,
};

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Releases any reader blocked on the FIFOs (augur before the fix), so a
/// failing test ends instead of hanging: opening a FIFO read-write never
/// blocks and lets a blocked open through; closing it gives EOF.
struct Unblock(Vec<PathBuf>);

impl Drop for Unblock {
    fn drop(&mut self) {
        let held: Vec<fs::File> = self
            .0
            .iter()
            .filter_map(|p| fs::File::options().read(true).write(true).open(p).ok())
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
    }
}

#[test]
fn a_fifo_as_certificate_or_key_stops_the_start_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let a = ca.leaf("a", "localhost", KeyKind::EcP256);
    let fifo = dir.path().join("cert.pem");
    mkfifo(&fifo);
    let link = dir.path().join("link.pem");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let _unblock = Unblock(vec![fifo.clone()]);
    let (a_cert, a_key) = (a.cert.to_str().unwrap(), a.key.to_str().unwrap());
    let (fifo, link) = (fifo.to_str().unwrap(), link.to_str().unwrap());
    for args in [
        ["--tls-cert", fifo, "--tls-key", a_key],
        ["--tls-cert", a_cert, "--tls-key", link],
        ["--admin-tls-cert", link, "--admin-tls-key", a_key],
    ] {
        let mut child = augur_bin()
            .arg("--check-config")
            .arg("--policies")
            .arg(dir.path())
            .arg("--schemas")
            .arg(dir.path())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if start.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let status = status.unwrap_or_else(|| panic!("{args:?}: the start hung"));
        assert!(!status.success(), "{args:?}: {stderr}");
        let named = args
            .iter()
            .any(|a| stderr.contains(a) && a.ends_with(".pem"));
        assert!(named && stderr.contains("named pipe"), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn a_fifo_put_in_place_of_the_certificate_is_refused_and_rotation_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let a = ca.leaf("a", "localhost", KeyKind::EcP256);
    let b = ca.leaf("b", "localhost b", KeyKind::EcP256);
    let live = dir.path().join("live");
    fs::create_dir(&live).unwrap();
    let files = augur::config::TlsFiles {
        cert: live.join("cert.pem"),
        key: live.join("key.pem"),
    };
    fs::copy(&a.cert, &files.cert).unwrap();
    fs::copy(&a.key, &files.key).unwrap();
    let fake = FakeOllama::builder().start().await;
    let (augur, tls) = super::serve_tls(&fake.url(), &files, |_, _| {}).await;
    let _unblock = Unblock(vec![files.cert.clone()]);
    let config = https::client_config(&ca.pem, &[b"h2", b"http/1.1"]);
    let fingerprint = tls.fingerprint();

    let fifo = dir.path().join("fifo.pem");
    mkfifo(&fifo);
    fs::rename(&fifo, &files.cert).unwrap();
    // Asked from a thread of its own: a reload stuck on the FIFO would
    // hold the store's state, and the question with it.
    let asking = tls.clone();
    let refused = tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(15) {
            if asking
                .last_error()
                .is_some_and(|e| e.contains("named pipe"))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    });
    let refused = tokio::time::timeout(Duration::from_secs(20), refused).await;
    assert!(matches!(refused, Ok(Ok(true))), "the FIFO was not refused");
    let mut conn = https::connect(augur.addr, config.clone()).await.unwrap();
    conn.ok("GET", "/api/version", None).await.unwrap();
    assert_eq!(conn.peer, https::cert_der(&a.cert));

    // The next good pair is loaded.
    super::replace_file(&b.key, &files.key);
    super::replace_file(&b.cert, &files.cert);
    let loaded = || tls.last_error().is_none() && tls.fingerprint() != fingerprint;
    assert!(super::eventually(Duration::from_secs(15), loaded).await);
    let mut conn = https::connect(augur.addr, config).await.unwrap();
    conn.ok("GET", "/api/version", None).await.unwrap();
    assert_eq!(conn.peer, https::cert_der(&b.cert));
    augur.stop().await;
}
