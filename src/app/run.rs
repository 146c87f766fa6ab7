//! The process's life: the state built from the config and policies, the
//! background tasks started ([`super::tasks`]), the admin listener and the
//! workers serving until a signal, the drain, then every task ended.

use std::time::Duration;

use tokio::net::TcpListener;

use super::{
    serve::{Accept, serve, serve_workers_ready},
    tasks::Background,
};
use crate::{
    config::Config,
    policy::PolicyStore,
    state::AppState,
    tls::{ServerTls, TlsError},
};

/// The proxy's and the admin listener's TLS, each when configured.
pub struct Tls {
    proxy: Option<ServerTls>,
    admin: Option<ServerTls>,
}

impl Tls {
    /// Load the configured certificates and keys (checked by
    /// `--check-config` too).
    pub fn load(config: &Config) -> Result<Self, TlsError> {
        Ok(Self {
            proxy: config
                .tls
                .as_ref()
                .map(|f| ServerTls::load(f, "proxy"))
                .transpose()?,
            admin: config
                .admin_tls
                .as_ref()
                .map(|f| ServerTls::load(f, "admin"))
                .transpose()?,
        })
    }
}

/// Longest wait at exit for the background tasks, told to end, to end.
const TASKS_END_WITHIN: Duration = Duration::from_secs(10);

/// Serve until SIGTERM or SIGINT, drain, end every background task.
pub async fn run(config: Config, open_files: Option<u64>, tls: Tls) -> Result<(), String> {
    let metrics = crate::telemetry::install_metrics()?;
    if config.traces.is_some() {
        crate::telemetry::otel::count_drops_from_zero();
    }
    let store = PolicyStore::open(&config.policies, &config.schemas)
        .map_err(|e| format!("invalid policy: {e}"))?;
    config.check_exposure(store.snapshot().auth.keys.len())?;
    let state =
        AppState::with_store(config.clone(), store, Some(metrics)).map_err(|e| e.to_string())?;
    state.fleet.spawn_sweepers();
    // Names found by DNS: their members before the first request.
    state.fleet.resolve_now().await;
    // The shared limit store, if any, is connected from this thread's
    // event loop; requests on worker threads use that connection.
    state.limits.start(Duration::from_secs(2)).await;
    if let Some(h) = state.limits.store_health() {
        tracing::info!(store = %h.location, up = h.up, "limit store");
    }
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let admin = TcpListener::bind(config.admin_listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.admin_listen))?;
    log_start(&config, &tls, workers, open_files);
    let shutdown = crate::shutdown::on_signal();
    let mut tasks = Background::new(shutdown.clone());
    start_tasks(&mut tasks, &state, &tls);
    // The admin listener (health, readiness) answers once the workers
    // serve, with their upstream connections opened ahead, and until they
    // have drained: through the drain `/-/ready` answers 503 and
    // `/-/healthy` 200, and metrics are still scraped.
    let admin_accept = Accept {
        drain: Duration::from_secs(1),
        tls: tls.admin.as_ref().map(ServerTls::acceptor),
        ..Accept::from_config(&config)
    };
    let (ready, workers_ready) = tokio::sync::oneshot::channel();
    let admin_router = crate::admin::router(state.clone());
    let (admin_stop, admin_shutdown) = tokio::sync::watch::channel(false);
    tasks.spawn(async move {
        let _ = workers_ready.await;
        serve(admin, admin_router, admin_shutdown, admin_accept).await;
    });
    let proxy_tls = tls.proxy.as_ref().map(ServerTls::acceptor);
    let listen = config.listen;
    let served =
        serve_workers_ready(state, listen, workers, shutdown, proxy_tls, Some(ready)).await;
    let _ = admin_stop.send(true);
    tasks.join(TASKS_END_WITHIN).await;
    served?;
    tracing::info!("augur stopped");
    Ok(())
}

/// Every background task, each ending on the shutdown signal.
fn start_tasks(tasks: &mut Background, state: &AppState, tls: &Tls) {
    tasks.spawn(state.policies.clone().reloading(tasks.shutdown()));
    // Certificates reload when their files change.
    for t in [&tls.proxy, &tls.admin].into_iter().flatten() {
        tasks.spawn(t.reloading(tasks.shutdown()));
    }
    // With several upstreams: probe them, learn their models.
    if let Some(monitor) = state.fleet.monitoring(tasks.shutdown()) {
        tasks.spawn(monitor);
    }
    // Names found by DNS: looked up again and again.
    for resolver in state.fleet.resolving(tasks.shutdown()) {
        tasks.spawn(resolver);
    }
    // With one upstream: read the models it has loaded (the monitor
    // does, with several).
    let every = crate::upstream::LOADED_POLL_EVERY;
    if let Some(poller) = state.fleet.polling_loaded(every, tasks.shutdown()) {
        tasks.spawn(poller);
    }
    // Histogram samples are buffered until folded in; fold them regularly
    // so memory stays flat whether or not anything scrapes /metrics.
    if let Some(handle) = state.metrics.clone() {
        tasks.every(Duration::from_secs(5), move || handle.run_upkeep());
    }
    let limits = state.limits.clone();
    tasks.every(Duration::from_secs(60), move || limits.housekeeping());
}

fn log_start(config: &Config, tls: &Tls, workers: usize, open_files: Option<u64>) {
    let upstreams = config
        .upstreams
        .iter()
        .map(|u| {
            let url = crate::wire::redact::without_userinfo(&u.url.to_string());
            format!("{}={url}", u.name)
        })
        .collect::<Vec<_>>()
        .join(",");
    tracing::info!(
        listen = %config.listen,
        workers,
        admin = %config.admin_listen,
        tls = tls.proxy.is_some(),
        admin_tls = tls.admin.is_some(),
        upstreams = %upstreams,
        open_files = open_files.map_or_else(|| "unlimited".to_string(), |n| n.to_string()),
        "augur started"
    );
    for (listener, t) in [("proxy", &tls.proxy), ("admin", &tls.admin)] {
        if let Some(t) = t {
            let cert = t.files().cert.display();
            tracing::info!(listener, %cert, fingerprint = %t.fingerprint(), "TLS certificate loaded");
        }
    }
}
