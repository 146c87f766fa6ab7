//! `augur`: parse the command line, load the config and policies, serve.

use std::process::ExitCode;

use clap::Parser;
use tokio::net::TcpListener;

use augur::{
    app::{self, AppState},
    config::{Cli, Config},
    policy::PolicyStore,
    telemetry::otel::TraceError,
    tls::ServerTls,
};
use opentelemetry_sdk::trace::SdkTracerProvider;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("augur: {e}");
            return ExitCode::from(2);
        }
    };
    // Before any schema is compiled (policies name schemas too).
    augur::validate::set_cache_budget(config.schema_cache_bytes);
    // The certificate files are checked by --check-config too.
    let tls = match load_tls(&config) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("augur: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.check_config {
        return match augur::policy::load_dir(&config.policies, &config.schemas) {
            Ok(policy) if let Err(e) = config.check_exposure(policy.auth.keys.len()) => {
                eprintln!("augur: {e}");
                ExitCode::from(2)
            }
            Ok(policy) => {
                eprintln!(
                    "augur: config OK; policies OK ({} file{}, version {})",
                    policy.meta.files.len(),
                    if policy.meta.files.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    policy.meta.version
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("augur: invalid policy: {e}");
                ExitCode::from(2)
            }
        };
    }
    let traces = match init_tracing(&config) {
        Ok(traces) => traces,
        Err(e) => {
            eprintln!("augur: {e}");
            return ExitCode::from(2);
        }
    };
    let open_files = raise_open_files_limit();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("augur: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(config, open_files, tls));
    if let Some(provider) = traces {
        // The spans still queued, within the export timeout.
        if let Err(e) = provider.shutdown() {
            tracing::warn!(error = %e, "traces not all exported at exit");
        }
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("augur: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The proxy's and the admin listener's TLS, each when configured.
struct Tls {
    proxy: Option<ServerTls>,
    admin: Option<ServerTls>,
}

fn load_tls(config: &Config) -> Result<Tls, augur::tls::TlsError> {
    Ok(Tls {
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

/// The log output, and the trace exporter when traces are configured
/// (returned, to be flushed at exit).
fn init_tracing(config: &Config) -> Result<Option<SdkTracerProvider>, TraceError> {
    use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt};
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&config.log_level));
    // Trace spans are for the exporter, not the log.
    let filter = match format!("{}=off", augur::telemetry::otel::TARGET).parse() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter,
    };
    let fmt = augur::telemetry::log::layer(config.log_format, filter);
    let provider = config
        .traces
        .as_ref()
        .map(augur::telemetry::otel::otlp_provider)
        .transpose()?;
    let traces = provider.as_ref().map(augur::telemetry::otel::layer);
    tracing_subscriber::registry().with(fmt).with(traces).init();
    if let Some(t) = &config.traces {
        let endpoint = augur::wire::redact::without_userinfo(&t.endpoint);
        tracing::info!(%endpoint, queue = t.queue_size, "exporting traces");
    }
    Ok(provider)
}

/// Raise the soft limit on open files to the hard limit, as Go programs
/// (Ollama among them) do at start: every stream holds two descriptors,
/// and the common soft default of 1,024 would refuse connections at about
/// 500 concurrent streams. Returns the limit in force.
fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, soft = ?limit.current, "cannot raise the open files limit");
        }
    }
    getrlimit(Resource::Nofile).current
}

async fn run(config: Config, open_files: Option<u64>, tls: Tls) -> Result<(), String> {
    let metrics = augur::telemetry::install_metrics()?;
    if config.traces.is_some() {
        augur::telemetry::otel::count_drops_from_zero();
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
    state.limits.start(std::time::Duration::from_secs(2)).await;
    if let Some(h) = state.limits.store_health() {
        tracing::info!(store = %h.location, up = h.up, "limit store");
    }
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let admin = TcpListener::bind(config.admin_listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.admin_listen))?;
    tracing::info!(
        listen = %config.listen,
        workers,
        admin = %config.admin_listen,
        tls = tls.proxy.is_some(),
        admin_tls = tls.admin.is_some(),
        upstreams = %config
            .upstreams
            .iter()
            .map(|u| format!(
                "{}={}",
                u.name,
                augur::wire::redact::without_userinfo(&u.url.to_string())
            ))
            .collect::<Vec<_>>()
            .join(","),
        open_files = open_files.map_or_else(|| "unlimited".to_string(), |n| n.to_string()),
        "augur started"
    );
    for (listener, t) in [("proxy", &tls.proxy), ("admin", &tls.admin)] {
        if let Some(t) = t {
            let cert = t.files().cert.display();
            tracing::info!(listener, %cert, fingerprint = %t.fingerprint(), "TLS certificate loaded");
        }
    }
    let shutdown = augur::shutdown::on_signal();
    let watcher = state.policies.clone().spawn_watcher(shutdown.clone());
    // Certificates reload when their files change.
    let tls_reloaders: Vec<_> = [&tls.proxy, &tls.admin]
        .into_iter()
        .flatten()
        .map(|t| t.spawn_reloader(shutdown.clone()))
        .collect();
    // With several upstreams: probe them, learn their models.
    let monitor = state.fleet.spawn_monitor(shutdown.clone());
    // Names found by DNS: looked up again and again.
    let _resolvers = state.fleet.spawn_resolvers(shutdown.clone());
    // With one upstream: read the models it has loaded (the monitor
    // does, with several).
    let loaded = state
        .fleet
        .spawn_loaded_poller(augur::upstream::LOADED_POLL_EVERY, shutdown.clone());
    // Histogram samples are buffered until folded in; fold them regularly
    // so memory stays flat whether or not anything scrapes /metrics.
    if let Some(handle) = state.metrics.clone() {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
            loop {
                tick.tick().await;
                handle.run_upkeep();
            }
        });
    }
    let limits = state.limits.clone();
    let housekeeping = tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tick.tick().await;
            limits.housekeeping();
        }
    });
    let admin_accept = app::Accept {
        drain: std::time::Duration::from_secs(1),
        tls: tls.admin.as_ref().map(ServerTls::acceptor),
        ..app::Accept::from_config(&config)
    };
    // The admin listener (health, readiness) answers once the workers
    // serve, with their upstream connections opened ahead, and until they
    // have drained: through the drain `/-/ready` answers 503 and
    // `/-/healthy` 200, and metrics are still scraped.
    let (ready, workers_ready) = tokio::sync::oneshot::channel();
    let admin_router = augur::admin::router(state.clone());
    let (admin_stop, admin_shutdown) = tokio::sync::watch::channel(false);
    let admin_task = tokio::spawn(async move {
        let _ = workers_ready.await;
        app::serve(admin, admin_router, admin_shutdown, admin_accept).await
    });
    let proxy_tls = tls.proxy.as_ref().map(ServerTls::acceptor);
    let listen = config.listen;
    app::serve_workers_ready(state, listen, workers, shutdown, proxy_tls, Some(ready)).await?;
    let _ = admin_stop.send(true);
    let _ = admin_task.await;
    housekeeping.abort();
    let _ = watcher.await;
    for reloader in tls_reloaders {
        let _ = reloader.await;
    }
    for task in [monitor, loaded].into_iter().flatten() {
        let _ = task.await;
    }
    tracing::info!("augur stopped");
    Ok(())
}
