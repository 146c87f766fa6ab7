//! Application state, the router, and the listeners.
//!
//! Layers on the proxy router, outermost first (each `.layer()` wraps what
//! was added before it, so the last one added runs first):
//!
//! 1. [`crate::telemetry::layer`]: request id, timing, access log, metrics;
//!    adds `Arc<Timing>` to the request extensions.
//! 2. The routes: the body-aware pipeline for chat/generate/show/tags and
//!    [`crate::passthrough::handle`] for everything else.

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use axum::{Router, extract::ConnectInfo, middleware};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::{net::TcpListener, sync::watch};
use tower::ServiceExt;

use crate::{
    config::Config,
    error::ProxyError,
    limits::Limits,
    passthrough,
    pipeline::capabilities::Capabilities,
    policy::{AuditLog, Policy, PolicyStore},
    upstream::Upstream,
    validate::Validators,
};

/// Everything a request may need, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub upstream: Upstream,
    pub policies: Arc<PolicyStore>,
    pub limits: Limits,
    pub audit: AuditLog,
    pub metrics: Option<PrometheusHandle>,
    pub capabilities: Capabilities,
    pub validators: Validators,
}

impl AppState {
    /// Build the state with a fixed initial policy (tests, embedding).
    pub fn new(
        config: Config,
        policy: Policy,
        metrics: Option<PrometheusHandle>,
    ) -> Result<Self, ProxyError> {
        let store = PolicyStore::with_policy(policy, &config.policies, &config.schemas);
        Self::with_store(config, store, metrics)
    }

    /// Build the state from the startup config and a loaded policy store.
    pub fn with_store(
        config: Config,
        store: PolicyStore,
        metrics: Option<PrometheusHandle>,
    ) -> Result<Self, ProxyError> {
        let upstream = Upstream::new(
            config.upstream.clone(),
            config.connect_timeout,
            config.first_byte_timeout,
            config.idle_timeout,
        )?;
        let capabilities = Capabilities::new(
            &config.upstream,
            config.capabilities_ttl,
            config.first_byte_timeout,
        )?;
        Ok(Self {
            config: Arc::new(config),
            upstream,
            policies: Arc::new(store),
            limits: Limits::new(),
            audit: AuditLog::spawn(),
            metrics,
            capabilities,
            validators: Validators::new(1024),
        })
    }

    /// The policy snapshot a new request runs under.
    pub fn policy(&self) -> Arc<Policy> {
        self.policies.snapshot()
    }
}

/// The proxy router.
pub fn router(state: AppState) -> Router {
    use crate::pipeline::native;
    use axum::routing::post;
    Router::new()
        .route(
            "/api/chat",
            post(native::chat).fallback(passthrough::handle),
        )
        .route(
            "/api/generate",
            post(native::generate).fallback(passthrough::handle),
        )
        .route(
            "/v1/chat/completions",
            post(crate::pipeline::openai::chat_completions).fallback(passthrough::handle),
        )
        .route(
            "/api/show",
            post(crate::pipeline::advertise::show).fallback(passthrough::handle),
        )
        .route(
            "/api/tags",
            axum::routing::get(crate::pipeline::advertise::tags).fallback(passthrough::handle),
        )
        .fallback(passthrough::handle)
        .with_state(state)
        .layer(middleware::from_fn(crate::telemetry::layer))
}

/// Serve `app` on `listener` until `shutdown` turns true, then stop
/// accepting and let in-flight requests finish for up to `drain`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
    header_timeout: Duration,
    drain: Duration,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let service = app.clone().map_request(move |mut req: http::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                    req.map(axum::body::Body::new)
                });
                let service = TowerToHyperService::new(service.map_err(|e: Infallible| e));
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                let conn = graceful.watch(conn.into_owned());
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(drain) => tracing::warn!("drain timeout reached; closing remaining connections"),
    }
}
