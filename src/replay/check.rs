//! `augur replay --check`: the replay upstream in-process, augur (this
//! config and these policies, recording off) in front of it, every
//! recorded client request sent through it in order, and one line per
//! exchange: `same` or what differs.

use std::{io::Write, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Map, Value};
use tokio::{net::TcpListener, sync::watch};

use super::{
    compare::{Seen, differences},
    server,
    tape::{Client as Recorded, Tape},
};
use crate::{
    app::{self, AppState},
    config::{Cli, Config, ReplayArgs, UpstreamSpec},
    policy::PolicyStore,
    record::done_fields,
};

/// Largest answer read back from augur.
const MAX_ANSWER: usize = 64 << 20;
/// Longest wait for one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// Check every recorded exchange; true when all are the same.
pub(super) async fn check(cli: &Cli, args: &ReplayArgs, tape: Arc<Tape>) -> Result<bool, String> {
    let bind = || async {
        TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot listen: {e}"))
    };
    let (stop, stopped) = watch::channel(false);
    let upstream = bind().await?;
    let upstream_url = format!(
        "http://{}",
        upstream.local_addr().map_err(|e| e.to_string())?
    );
    let replay = server::router(tape.clone(), args.timing);
    tokio::spawn(async move {
        let _ = axum::serve(upstream, replay).await;
    });
    let mut config = Config::load(cli).map_err(|e| e.to_string())?;
    config.upstreams = vec![UpstreamSpec::from_url(&upstream_url).map_err(|e| e.to_string())?];
    let store = PolicyStore::open(&config.policies, &config.schemas)
        .map_err(|e| format!("invalid policy: {e}"))?;
    let state = AppState::with_store(config, store, None).map_err(|e| e.to_string())?;
    state.record.turn_off();
    let proxy = bind().await?;
    let url = format!("http://{}", proxy.local_addr().map_err(|e| e.to_string())?);
    let accept = app::Accept::from_config(&state.config);
    tokio::spawn(app::serve(proxy, app::router(state), stopped, accept));
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut out = std::io::stdout().lock();
    let mut all_same = true;
    for (n, recorded) in tape.clients.iter().enumerate() {
        let now = send(&client, &url, recorded, args.api_key.as_deref()).await;
        let verdict = match now {
            Ok(now) => {
                let diffs = differences(&seen(recorded), &now);
                if diffs.is_empty() {
                    "same".to_string()
                } else {
                    format!("differs: {}", diffs.join("; "))
                }
            }
            Err(e) => format!("differs: {e}"),
        };
        all_same &= verdict == "same";
        let _ = writeln!(
            out,
            "{} {} {} {}: {verdict}",
            n + 1,
            recorded.request_id,
            recorded.method,
            recorded.route
        );
    }
    let _ = stop.send(true);
    Ok(all_same)
}

fn seen(recorded: &Recorded) -> Seen {
    Seen {
        status: recorded.answer.status,
        body: recorded.answer.body(),
        headers: recorded.headers.clone(),
        done: recorded.done.clone(),
    }
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// Send `recorded`'s request to augur at `url`; what came back.
async fn send(
    client: &HttpClient,
    url: &str,
    recorded: &Recorded,
    key: Option<&str>,
) -> Result<Seen, String> {
    let method = Method::from_bytes(recorded.method.as_bytes()).unwrap_or(Method::POST);
    let mut req = Request::builder()
        .method(method)
        .uri(format!("{url}{}", recorded.route))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        req = req.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let req = req
        .body(Full::new(Bytes::from(recorded.body.clone())))
        .map_err(|e| e.to_string())?;
    let response = tokio::time::timeout(ANSWER_TIMEOUT, client.request(req))
        .await
        .map_err(|_| "no answer in time".to_string())?
        .map_err(|e| format!("request failed: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(ANSWER_TIMEOUT, Limited::new(body, MAX_ANSWER).collect())
        .await
        .map_err(|_| "the answer did not end in time".to_string())?
        .map_err(|e| format!("the answer failed: {e}"))?
        .to_bytes();
    let body = String::from_utf8_lossy(&body).into_owned();
    let headers: Map<String, Value> = parts
        .headers
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("x-augur-"))
        .map(|(n, v)| {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_string(), Value::String(v))
        })
        .collect();
    let done = done_fields(body.split_inclusive('\n'));
    Ok(Seen {
        status: parts.status.as_u16(),
        body,
        headers,
        done,
    })
}
