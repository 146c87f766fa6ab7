//! Listings of several upstreams as one: `GET /api/tags`, `GET /api/ps`
//! and `GET /v1/models` are asked of every healthy upstream at once and
//! merged in Ollama's shape, each model once (the first upstream in the
//! configured order that lists it gives its entry). Each upstream's part,
//! head and whole body together, must come within
//! `upstream.listing_timeout_ms` (default 10 s): one that stalls or
//! trickles past it is left out, and the others answer.

use std::collections::HashSet;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Map, Value};

use super::{member::Member, state::Fleet, target::X_AUGUR_UPSTREAM};
use crate::{client::ClientInfo, error::ProxyError, upstream::client::Upstream};

/// Most entries in a merged listing.
const MAX_ENTRIES: usize = 20_000;

/// A listing several upstreams answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// `GET /api/tags`: `{"models": [{"name", ...}]}`.
    Tags,
    /// `GET /api/ps`: `{"models": [{"name", ...}]}`.
    Ps,
    /// `GET /v1/models`: `{"object": "list", "data": [{"id", ...}]}`.
    OpenAiModels,
}

impl Listing {
    fn path(self) -> &'static str {
        match self {
            Listing::Tags => "/api/tags",
            Listing::Ps => "/api/ps",
            Listing::OpenAiModels => "/v1/models",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Listing::Tags | Listing::Ps => "models",
            Listing::OpenAiModels => "data",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Listing::Tags | Listing::Ps => "name",
            Listing::OpenAiModels => "id",
        }
    }
}

/// What one upstream gave.
enum Part {
    Entries(Vec<Value>),
    /// An answer that was not a success (read whole), passed on when
    /// nobody succeeded.
    Refused(Response<Body>),
    Failed(ProxyError),
}

/// One upstream's part of a merged listing.
struct Ask<'a> {
    listing: Listing,
    headers: &'a HeaderMap,
    client: Option<ClientInfo>,
    /// Largest body read.
    limit: usize,
}

impl Fleet {
    /// `listing` of every healthy upstream (all of them when none is),
    /// merged. Upstreams that fail, or do not answer in whole (head and
    /// body) within the listing timeout, are left out; when all fail, the
    /// first one's answer (or error) is the answer. `headers`: the client's.
    pub async fn merged(
        &self,
        listing: Listing,
        headers: &HeaderMap,
        client: Option<ClientInfo>,
        limit: usize,
    ) -> Result<Response<Body>, ProxyError> {
        let any_healthy = self.open().any(|(m, _)| m.healthy());
        let deadline = self.listing_timeout;
        let asks = self
            .open()
            .filter(|(m, _)| m.healthy() || !any_healthy)
            .map(|(member, upstream)| {
                let ask = Ask {
                    listing,
                    headers,
                    client: client.clone(),
                    limit,
                };
                async move {
                    match tokio::time::timeout(deadline, ask.run(&member, upstream)).await {
                        Ok(part) => part.unwrap_or_else(Part::Failed),
                        Err(_) => {
                            tracing::warn!(
                                upstream = member.name(),
                                path = listing.path(),
                                timeout_ms = deadline.as_millis() as u64,
                                "listing not answered in time; left out"
                            );
                            Part::Failed(ProxyError::UpstreamTimeout(deadline.as_millis()))
                        }
                    }
                }
            });
        let parts: Vec<Part> = futures_util::future::join_all(asks).await;
        if !parts.iter().any(|p| matches!(p, Part::Entries(_))) {
            return match parts.into_iter().next() {
                Some(Part::Refused(response)) => Ok(response),
                Some(Part::Failed(e)) => Err(e),
                _ => Err(ProxyError::UpstreamUnavailable(
                    "no upstream answered".into(),
                )),
            };
        }
        let lists = parts.into_iter().filter_map(|p| match p {
            Part::Entries(e) => Some(e),
            _ => None,
        });
        Ok(render(listing, merge(lists, listing.id())))
    }
}

impl Ask<'_> {
    /// Ask `upstream` (`member`) and read its whole answer; unbounded in
    /// time (the caller bounds it).
    async fn run(self, member: &Member, upstream: &Upstream) -> Result<Part, ProxyError> {
        let path = self.listing.path();
        let mut req = Request::get(path)
            .body(Bytes::new())
            .map_err(|e| ProxyError::Internal(e.to_string()))?;
        *req.headers_mut() = self.headers.clone();
        req.headers_mut().remove(&X_AUGUR_UPSTREAM);
        let response = upstream
            .call(req, self.client, None)
            .await
            .inspect_err(|e| member.failed(&e.to_string()))?;
        let (parts, body) = response.into_parts();
        let bytes = Limited::new(body, self.limit)
            .collect()
            .await
            .map_err(|e| ProxyError::UpstreamProtocol(format!("{path}: {e}")))?
            .to_bytes();
        if !parts.status.is_success() {
            return Ok(Part::Refused(Response::from_parts(
                parts,
                Body::from(bytes),
            )));
        }
        member.answered();
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ProxyError::UpstreamProtocol(format!("{path}: {e}")))?;
        Ok(Part::Entries(entries(value, self.listing.key())))
    }
}

/// The entries of one listing.
fn entries(mut value: Value, key: &str) -> Vec<Value> {
    match value.get_mut(key).map(Value::take) {
        Some(Value::Array(entries)) => entries,
        _ => Vec::new(),
    }
}

/// The entries of every list, in order, each `id` once.
fn merge(lists: impl Iterator<Item = Vec<Value>>, id: &str) -> Vec<Value> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for entry in lists.flatten() {
        if out.len() >= MAX_ENTRIES {
            break;
        }
        let name = entry.get(id).and_then(Value::as_str).map(str::to_string);
        if name.is_none_or(|n| seen.insert(n)) {
            out.push(entry);
        }
    }
    out
}

/// The merged listing in the shape (and content type) Ollama answers it.
fn render(listing: Listing, entries: Vec<Value>) -> Response<Body> {
    let mut object = Map::new();
    let content_type = match listing {
        Listing::Tags | Listing::Ps => "application/json; charset=utf-8",
        Listing::OpenAiModels => {
            object.insert("object".into(), Value::String("list".into()));
            "application/json"
        }
    };
    object.insert(listing.key().into(), Value::Array(entries));
    let mut text = crate::wire::to_go_json(&Value::Object(object));
    if listing == Listing::OpenAiModels {
        text.push('\n');
    }
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
