//! The forwarding floor: augur's upstream client behind a bare hyper
//! HTTP/1.1 server on a single-threaded event loop, with no router, no
//! telemetry, no auth or limits and no body-aware stages. `bench/run` puts
//! it beside augur and nginx to show what augur's stages cost on top of
//! forwarding alone.
//!
//! `bare LISTEN_ADDR UPSTREAM_URL`

use std::{convert::Infallible, time::Duration};

use augur::{ClientInfo, Upstream};
use axum::body::Body;
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().ok_or("usage: bare LISTEN_ADDR UPSTREAM_URL")?;
    let upstream = args.next().ok_or("usage: bare LISTEN_ADDR UPSTREAM_URL")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let minute = Duration::from_secs(60);
        let upstream = Upstream::new(upstream.parse()?, minute, minute, minute)?;
        let listener = TcpListener::bind(listen).await?;
        loop {
            let (stream, peer) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            let upstream = upstream.clone();
            let client = ClientInfo::new(peer.ip());
            tokio::spawn(async move {
                let service = service_fn(move |req: http::Request<Incoming>| {
                    let upstream = upstream.clone();
                    let client = client.clone();
                    async move {
                        let response = match upstream
                            .forward(req.map(Body::new), Some(client), None)
                            .await
                        {
                            Ok(response) => response,
                            Err(e) => e.into_response_for(augur::Flavor::Ollama),
                        };
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
