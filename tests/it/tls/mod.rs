//! HTTPS on augur's listeners: HTTP/1.1 and HTTP/2 chosen by ALPN, only
//! TLS 1.2 and 1.3, certificates replaced under load without a failed
//! request, bad replacements refused (a FIFO among them, never waited
//! on), stalled handshakes bounded, and the binary's start-up checks.
//! Certificates are made at test time with the `openssl` command (see
//! `common::certs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

mod handshakes;
mod rotation;
mod serving;
#[cfg(unix)]
mod special_files;
mod startup;

use std::{path::Path, time::Duration};

use augur::{
    ServerTls,
    app::{Accept, AppState},
    config::{Config, TlsFiles},
    policy::Policy,
};

use common::{Augur, certs::Leaf};

/// The files of `leaf` as a listener's TLS settings.
fn files(leaf: &Leaf) -> TlsFiles {
    TlsFiles {
        cert: leaf.cert.clone(),
        key: leaf.key.clone(),
    }
}

/// augur over HTTPS with the certificate in `files`, in front of
/// `upstream`; `tweak` adjusts the config and the accept settings. The
/// reload task runs until the returned augur stops.
async fn serve_tls(
    upstream: &str,
    files: &TlsFiles,
    tweak: impl FnOnce(&mut Config, &mut Accept),
) -> (Augur, ServerTls) {
    let tls = ServerTls::load(files, "proxy").unwrap();
    let mut config = Config {
        upstreams: common::upstreams(upstream),
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    let mut accept = Accept::from_config(&config);
    tweak(&mut config, &mut accept);
    accept.tls = Some(tls.acceptor());
    let state = AppState::new(config, Policy::permissive(), None).unwrap();
    let augur = common::start_accept(state, accept).await;
    tokio::spawn(tls.reloading(augur.stopping()));
    (augur, tls)
}

/// Wait up to `within` for `done`, checking every 50 ms.
async fn eventually(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = tokio::time::Instant::now();
    while start.elapsed() < within {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// Replace `to` with a copy of `from` in one step (write aside, rename).
fn replace_file(from: &Path, to: &Path) {
    let aside = to.with_extension("new");
    std::fs::copy(from, &aside).unwrap();
    std::fs::rename(&aside, to).unwrap();
}
