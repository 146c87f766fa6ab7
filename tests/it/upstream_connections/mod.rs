//! Upstream connections that the upstream closed, and connections opened
//! ahead: a request never fails because augur wrote it on a connection the
//! upstream had already closed, and augur opens connections in proportion
//! to demand. Each upstream here is purpose-built (see [`servers`]).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod resend;
mod rules;
mod servers;
mod warm;

use std::{net::SocketAddr, time::Duration};

use augur::{
    app::{self, AppState},
    config::Config,
    policy::Policy,
};
use serde_json::json;
use tokio::sync::watch;

use crate::common::{self, client};

/// augur as the binary runs it (`app::serve_workers`): `workers` threads,
/// each with its own event loop and connection pools; returns once every
/// worker has opened its connections ahead and serves.
pub(super) async fn serve_workers(config: Config, workers: usize) -> Workers {
    let state = AppState::new(config, Policy::permissive(), Some(common::metrics())).unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], common::free_port()));
    let (stop, stopping) = watch::channel(false);
    let (ready, warmed) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        app::serve_workers_ready(state, addr, workers, stopping, None, Some(ready))
            .await
            .unwrap();
    });
    warmed.await.unwrap();
    Workers {
        url: format!("http://{addr}"),
        _stop: stop,
    }
}

/// A running [`serve_workers`]; stops when dropped.
pub(super) struct Workers {
    pub url: String,
    _stop: watch::Sender<bool>,
}

/// A config for one upstream at `url`.
pub(super) fn config(url: &str) -> Config {
    Config {
        upstreams: common::upstreams(url),
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

/// `/api/chat` with nothing for augur to act on: forwarded as it came.
pub(super) fn chat() -> serde_json::Value {
    json!({"model": "m", "stream": false, "messages": [{"role": "user", "content": "hi"}]})
}

/// POST a chat to `url` `n` times one after the other; the statuses that
/// were not 200.
pub(super) async fn one_by_one(url: &str, n: usize) -> Vec<u16> {
    let c = client();
    let mut failed = Vec::new();
    for _ in 0..n {
        let r = c
            .post(format!("{url}/api/chat"))
            .json(&chat())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        if status != 200 || body != servers::ANSWER {
            failed.push(status);
        }
    }
    failed
}

/// POST `n` chats to `url` at once; the statuses that were not 200.
pub(super) async fn at_once(url: &str, n: usize) -> Vec<u16> {
    let c = client();
    let sends = (0..n).map(|_| {
        let c = c.clone();
        async move {
            let r = c
                .post(format!("{url}/api/chat"))
                .json(&chat())
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.text().await.unwrap();
            (status, body)
        }
    });
    futures_util::future::join_all(sends)
        .await
        .into_iter()
        .filter(|(status, body)| *status != 200 || body != servers::ANSWER)
        .map(|(status, _)| status)
        .collect()
}
