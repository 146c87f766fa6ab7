//! A real `redis-server` for tests of the shared limit store: a child
//! process on a port of its own, in a temporary directory, without
//! persistence; killed on drop. [`Redis::start_tls`] serves TLS only, with
//! a certificate for `localhost` from a CA of its own (made with the
//! `openssl` command, see [`super::certs`]). Tests that use it fail, rather than skip,
//! when `redis-server` is not installed: CI installs it.
//!
//! (The library's unit tests have their own copy: test code is not shared
//! between them and the integration tests.)

use std::{process::Stdio, time::Duration};

/// A running `redis-server`.
pub struct Redis {
    child: Option<tokio::process::Child>,
    pub port: u16,
    dir: tempfile::TempDir,
    /// The CA that signed the server's certificate, when it serves TLS.
    pub ca: Option<std::path::PathBuf>,
}

impl Redis {
    /// Start one on a free port.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Self {
            child: None,
            port: super::free_port(),
            dir,
            ca: None,
        };
        r.restart().await;
        r
    }

    /// Start one that speaks TLS only.
    pub async fn start_tls() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ca = make_certificates(dir.path());
        let mut r = Self {
            child: None,
            port: super::free_port(),
            dir,
            ca: Some(ca),
        };
        r.restart().await;
        r
    }

    /// `redis://127.0.0.1:<port>/0`, or `rediss://localhost:<port>/0`.
    pub fn url(&self) -> String {
        match self.ca {
            None => format!("redis://127.0.0.1:{}/0", self.port),
            Some(_) => format!("rediss://localhost:{}/0", self.port),
        }
    }

    /// Kill the server (its data goes with it).
    pub async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
            let _ = c.wait().await;
        }
    }

    /// Start it again on the same port, empty, and wait until it answers.
    pub async fn restart(&mut self) {
        self.stop().await;
        let mut cmd = tokio::process::Command::new("redis-server");
        let port = self.port.to_string();
        match self.ca {
            None => cmd.args(["--port", &port]),
            Some(_) => cmd
                .args([
                    "--port",
                    "0",
                    "--tls-port",
                    &port,
                    "--tls-auth-clients",
                    "no",
                ])
                .args(["--tls-cert-file", "leaf.pem", "--tls-key-file", "leaf.key"])
                .args(["--tls-ca-cert-file", "ca.pem"]),
        };
        let child = cmd
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            // `DEBUG SLEEP` stalls the server in the stall tests.
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(self.dir.path())
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        self.child = Some(child);
        if self.ca.is_some() {
            // A plain client cannot ask; the port accepting is enough.
            for _ in 0..200 {
                if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                    .await
                    .is_ok()
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            panic!("redis-server (TLS) did not start on port {}", self.port);
        }
        let client = redis::Client::open(self.url()).unwrap();
        for _ in 0..200 {
            if let Ok(mut c) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING")
                    .query_async::<String>(&mut c)
                    .await
                    .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("redis-server did not start on port {}", self.port);
    }
}

/// A CA, and a certificate it signed for `localhost` and 127.0.0.1, in
/// `dir` (`ca.pem`, `leaf.pem`, `leaf.key`); returns the CA's path.
fn make_certificates(dir: &std::path::Path) -> std::path::PathBuf {
    let ca = super::certs::Ca::new(dir);
    ca.leaf("leaf", "localhost", super::certs::KeyKind::Rsa);
    ca.pem
}
