//! The listeners: the proxy's routes inside admission and telemetry, the
//! accept loop with its bounds, and one worker event loop per CPU.

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::watch};
use tower::ServiceExt;

use crate::{config::Config, state::AppState};

/// The proxy: the routes inside admission, inside the telemetry service.
pub type Proxy = crate::telemetry::Telemetry<crate::ingress::Ingress<Router>>;

/// The proxy's routes, wrapped as a whole in [`crate::ingress::IngressLayer`]
/// and [`crate::telemetry::TelemetryLayer`] (one wrapper each per request,
/// rather than one per route).
pub fn router(state: AppState) -> Proxy {
    use crate::surface::{advertise, anthropic, listing, ollama, openai, passthrough, responses};
    use axum::routing::{get, post};
    use tower::Layer as _;
    let routes = Router::new()
        .route(
            "/api/chat",
            post(ollama::chat).fallback(passthrough::handle),
        )
        .route(
            "/api/generate",
            post(ollama::generate).fallback(passthrough::handle),
        )
        .route(
            "/v1/chat/completions",
            post(openai::chat_completions).fallback(passthrough::handle),
        )
        .route(
            "/v1/responses",
            post(responses::responses).fallback(passthrough::handle),
        )
        .route(
            "/v1/messages",
            post(anthropic::messages).fallback(passthrough::handle),
        )
        .route(
            "/api/show",
            post(advertise::show).fallback(passthrough::handle),
        )
        .route(
            "/api/tags",
            get(advertise::tags).fallback(passthrough::handle),
        )
        .route("/api/ps", get(listing::ps).fallback(passthrough::handle))
        .route(
            "/v1/models",
            get(listing::openai_models).fallback(passthrough::handle),
        )
        .fallback(passthrough::handle)
        .with_state(state.clone());
    let events = state.events.clone();
    let admitted = crate::ingress::IngressLayer::new(state).layer(routes);
    crate::telemetry::TelemetryLayer::new(crate::ingress::routes::metric_label, events)
        .layer(admitted)
}

/// How client connections are accepted.
#[derive(Clone)]
pub struct Accept {
    /// A new connection's first byte, and each request's headers, must
    /// arrive within this.
    pub header_timeout: Duration,
    /// In-flight requests may finish for this long after shutdown.
    pub drain: Duration,
    /// One slot per open connection, shared by every listener.
    pub slots: Arc<tokio::sync::Semaphore>,
    /// HTTPS when set (see [`crate::tls::ServerTls::acceptor`]).
    pub tls: Option<crate::tls::TlsAcceptor>,
    /// Longest a TLS handshake may take once its first byte arrived.
    pub handshake_timeout: Duration,
}

impl Accept {
    /// Settings from the startup config.
    pub fn from_config(config: &Config) -> Self {
        Self {
            header_timeout: config.client_header_timeout,
            drain: config.drain_timeout,
            slots: Arc::new(tokio::sync::Semaphore::new(config.max_connections)),
            tls: None,
            handshake_timeout: crate::tls::HANDSHAKE_TIMEOUT,
        }
    }
}

/// Serve `app` on `listener` until `shutdown` turns true, then stop
/// accepting and let in-flight requests finish for up to `accept.drain`.
///
/// A connection is accepted only while a slot is free (the rest wait in
/// the listen backlog) and is closed if its first byte does not arrive
/// within the header timeout: hyper's own header timeout starts only once
/// a request has begun, so a connection that never sends a byte would
/// otherwise hold its slot and descriptor forever. With `accept.tls`, the
/// handshake runs in the connection's task, bounded the same way (see
/// [`crate::tls::accept`]).
pub async fn serve<S, B>(
    listener: TcpListener,
    app: S,
    mut shutdown: watch::Receiver<bool>,
    accept: Accept,
) where
    S: tower::Service<axum::extract::Request, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // hyper's head bounds are a memory backstop above augur's own, which
    // answer in the route's error shape (see `crate::ingress::head`).
    use crate::ingress::head::{HYPER_MAX_BUF, HYPER_MAX_FIELDS, HYPER_MAX_HEADER_LIST};
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(accept.header_timeout)
        .max_buf_size(HYPER_MAX_BUF)
        .max_headers(HYPER_MAX_FIELDS)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(HYPER_MAX_HEADER_LIST);
    let graceful = GracefulShutdown::new();
    loop {
        let slot = tokio::select! {
            slot = accept.slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
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
                let client = crate::client::ClientInfo::new(peer.ip())
                    .over_tls(accept.tls.is_some());
                let service = app.clone().map_request(move |mut req: http::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(client.clone());
                    req.map(axum::body::Body::new)
                });
                let service = TowerToHyperService::new(service.map_err(|e: Infallible| e));
                let first_byte = accept.header_timeout;
                let (tls, handshake_timeout) = (accept.tls.clone(), accept.handshake_timeout);
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let mut stopping = shutdown.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    if !first_byte_arrives(&stream, first_byte, &mut stopping).await {
                        return;
                    }
                    let io = crate::client::ClientIo::new(stream);
                    let ended = match tls {
                        None => {
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
                            watcher.watch(conn.into_owned()).await
                        }
                        Some(tls) => {
                            use crate::tls::accept::handshake;
                            let shaken = handshake(&tls, io, handshake_timeout, first_byte, &mut stopping);
                            let Some(io) = shaken.await else { return };
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
                            watcher.watch(conn.into_owned()).await
                        }
                    };
                    if let Err(e) = ended {
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
        _ = tokio::time::sleep(accept.drain) => tracing::warn!("drain timeout reached; closing remaining connections"),
    }
}

/// Wait for a new connection's first byte before handing it to hyper or
/// to the TLS handshake (either would wait forever to learn the protocol);
/// false when it does not come within `within`, or augur is stopping.
async fn first_byte_arrives(
    stream: &tokio::net::TcpStream,
    within: Duration,
    stopping: &mut watch::Receiver<bool>,
) -> bool {
    let mut probe = [0u8; 1];
    tokio::select! {
        peeked = tokio::time::timeout(within, stream.peek(&mut probe)) => {
            matches!(peeked, Ok(Ok(n)) if n > 0)
        }
        _ = stopping.changed() => false,
    }
}

/// A listening socket on `addr` that other workers may share
/// (`SO_REUSEPORT`: the kernel spreads connections across them).
fn shared_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Serve the proxy on `addr` with `workers` threads, each running its own
/// single-threaded event loop with its own listener (`SO_REUSEPORT`) and
/// its own upstream connection pool, so a request never crosses threads;
/// over HTTPS when `tls` is set.
/// Returns once every worker has drained after `shutdown`.
pub async fn serve_workers(
    state: AppState,
    addr: SocketAddr,
    workers: usize,
    shutdown: watch::Receiver<bool>,
    tls: Option<crate::tls::TlsAcceptor>,
) -> Result<(), String> {
    serve_workers_ready(state, addr, workers, shutdown, tls, None).await
}

/// [`serve_workers`], and `ready` fires once every worker has opened its
/// upstream connections ahead (or given up on them) and serves.
pub async fn serve_workers_ready(
    state: AppState,
    addr: SocketAddr,
    workers: usize,
    shutdown: watch::Receiver<bool>,
    tls: Option<crate::tls::TlsAcceptor>,
    ready: Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), String> {
    let accept = Accept {
        tls,
        ..Accept::from_config(&state.config)
    };
    // Bind every listener before serving, so a bad address fails at start
    // and port 0 resolves to one port shared by all workers.
    let std_first = {
        let first = shared_listener(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        first.into_std().map_err(|e| e.to_string())?
    };
    let bound = std_first.local_addr().map_err(|e| e.to_string())?;
    let mut listeners = vec![std_first];
    for _ in 1..workers.max(1) {
        let l = shared_listener(bound).map_err(|e| format!("cannot listen on {bound}: {e}"))?;
        listeners.push(l.into_std().map_err(|e| e.to_string())?);
    }
    let mut done = Vec::new();
    let mut warmed = Vec::new();
    for (i, std_listener) in listeners.into_iter().enumerate() {
        let (ready, warm) = tokio::sync::oneshot::channel::<()>();
        warmed.push(warm);
        let ready = Some(ready);
        let worker_state = state.for_worker().map_err(|e| e.to_string())?;
        let shutdown = shutdown.clone();
        let accept = accept.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("augur-worker-{i}"))
            .spawn(move || {
                // A single-threaded event loop per worker: a request and
                // the upstream connection it drives are one task, so
                // nothing is handed between threads or tasks.
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot start a worker runtime");
                        return;
                    }
                };
                runtime.block_on(async move {
                    match TcpListener::from_std(std_listener) {
                        Ok(listener) => {
                            // This worker's share of the connections opened
                            // ahead, so that the first clients find them
                            // ready (they wait in the listen backlog
                            // meanwhile); more follow demand.
                            let warming = worker_state.fleet.keep_ahead(i, workers.max(1));
                            let within = crate::upstream::WARM_WITHIN;
                            let _ = tokio::time::timeout(within, warming).await;
                            if let Some(ready) = ready {
                                let _ = ready.send(());
                            }
                            // This worker's own connection to a shared
                            // limit store, before its first request.
                            worker_state.limits.start(Duration::from_secs(2)).await;
                            let app = router(worker_state);
                            serve(listener, app, shutdown, accept).await;
                        }
                        Err(e) => tracing::error!(error = %e, "worker listener failed"),
                    }
                });
                let _ = tx.send(());
            })
            .map_err(|e| format!("cannot start worker thread: {e}"))?;
        done.push(rx);
    }
    tokio::spawn(async move {
        for warm in warmed {
            let _ = warm.await;
        }
        if let Some(ready) = ready {
            let _ = ready.send(());
        }
    });
    for rx in done {
        let _ = rx.await;
    }
    Ok(())
}
