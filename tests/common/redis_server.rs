//! A real `redis-server` for tests of the shared limit store: a child
//! process on a port of its own, in a temporary directory, without
//! persistence; killed on drop. Tests that use it fail, rather than skip,
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
}

impl Redis {
    /// Start one on a free port.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Self {
            child: None,
            port: super::free_port(),
            dir,
        };
        r.restart().await;
        r
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
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
        let child = tokio::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        self.child = Some(child);
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
