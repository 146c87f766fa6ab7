//! The binary: TLS files that cannot be used stop it at start with a
//! message naming the file; good ones serve HTTPS on both listeners.

use std::{path::Path, time::Duration};

use fake_ollama::FakeOllama;

use crate::common::{
    augur_bin,
    certs::{Ca, KeyKind},
    free_port, https,
};

/// `augur --check-config` with `args`: its exit status and stderr.
fn check_config(args: &[&str], dir: &Path) -> (bool, String) {
    let out = augur_bin()
        .arg("--check-config")
        .arg("--policies")
        .arg(dir)
        .arg("--schemas")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unusable_tls_files_refuse_to_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let a = ca.leaf("a", "localhost", KeyKind::EcP256);
    let b = ca.leaf("b", "localhost", KeyKind::Rsa);
    let empty = tempfile::tempdir().unwrap();
    let (a_cert, a_key) = (a.cert.to_str().unwrap(), a.key.to_str().unwrap());
    let b_key = b.key.to_str().unwrap();
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let garbage = garbage.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--tls-cert", missing, "--tls-key", a_key], &[missing]),
        (&["--tls-cert", a_cert, "--tls-key", missing], &[missing]),
        (&["--tls-cert", garbage, "--tls-key", a_key], &[garbage]),
        (
            &["--tls-cert", a_cert, "--tls-key", b_key],
            &[a_cert, b_key, "does not match"],
        ),
        (&["--tls-cert", a_cert], &["--tls-key", "both or neither"]),
        (
            &["--admin-tls-cert", a_cert, "--admin-tls-key", b_key],
            &["does not match", b_key],
        ),
    ];
    for (args, expect) in cases {
        let (ok, stderr) = check_config(args, empty.path());
        assert!(!ok, "{args:?}: {stderr}");
        for e in expect {
            assert!(stderr.contains(e), "{args:?}: {e:?} not in {stderr}");
        }
    }
    let (ok, stderr) = check_config(&["--tls-cert", a_cert, "--tls-key", a_key], empty.path());
    assert!(ok, "{stderr}");
}

#[tokio::test]
async fn the_binary_serves_https_on_both_listeners() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path());
    let proxy = ca.leaf("proxy", "localhost", KeyKind::EcP256);
    let admin = ca.leaf("admin", "localhost admin", KeyKind::Rsa);
    let config = dir.path().join("augur.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\ntls_cert = {:?}\ntls_key = {:?}\nadmin_tls_cert = {:?}\nadmin_tls_key = {:?}\n",
            proxy.cert, proxy.key, admin.cert, admin.key
        ),
    )
    .unwrap();
    let fake = FakeOllama::builder().start().await;
    let empty = tempfile::tempdir().unwrap();
    let (port, admin_port) = (free_port(), free_port());
    let _child = tokio::process::Command::from(augur_bin())
        .arg("--config")
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin_port}")])
        .args(["--upstream", &fake.url()])
        .arg("--policies")
        .arg(empty.path())
        .arg("--schemas")
        .arg(empty.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = https::client_config(&ca.pem, &[b"h2", b"http/1.1"]);
    let admin_addr = format!("127.0.0.1:{admin_port}").parse().unwrap();
    let start = std::time::Instant::now();
    let mut conn = loop {
        if let Ok(conn) = https::connect(admin_addr, client.clone()).await {
            break conn;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "augur did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(conn.peer, https::cert_der(&admin.cert));
    conn.ok("GET", "/-/healthy", None).await.unwrap();
    let proxy_addr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut conn = https::connect(proxy_addr, client).await.unwrap();
    assert_eq!(conn.alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(conn.peer, https::cert_der(&proxy.cert));
    let version = conn.ok("GET", "/api/version", None).await.unwrap();
    assert!(version.json()["version"].is_string());
}
