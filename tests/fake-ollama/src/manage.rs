//! Embeddings and model management: `/api/embed`, `/api/embeddings`, `/api/pull`,
//! `/api/push`, `/api/create` (NDJSON progress), `/api/copy`, `DELETE /api/delete`, and
//! `HEAD`/`POST /api/blobs/:digest` (streamed, sha256-verified, never held in memory).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::Shared;
use crate::catalog::normalize;
use crate::wire::{self, ApiError, JSON, JSON_UTF8, NDJSON, go_json, go_quote, respond};

/// A deterministic, L2-normalised 8-dimensional vector for `text`.
pub fn vector(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v: Vec<f32> = (0..8)
        .map(|i| {
            for b in text.bytes().chain([i as u8]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            (h % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

pub fn inputs(v: Option<&Value>) -> Result<Vec<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::new(400, "invalid input type"))
            })
            .collect(),
        Some(_) => Err(ApiError::new(400, "invalid input type")),
    }
}

fn known(st: &Shared, v: &Value) -> Result<String, ApiError> {
    let model = v.get("model").and_then(Value::as_str).unwrap_or("");
    if st.find_model(model).is_none() {
        return Err(ApiError::new(
            404,
            format!("model {} not found, try pulling it first", go_quote(model)),
        ));
    }
    Ok(model.to_owned())
}

pub async fn embed(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let r = wire::parse_body(&body, "EmbedRequest").and_then(|v| {
        let model = known(&st, &v)?;
        let texts = inputs(v.get("input"))?;
        if texts.is_empty() {
            return Ok(json!({ "model": model, "embeddings": [] }));
        }
        let embeddings: Vec<Vec<f32>> = texts.iter().map(|t| vector(t)).collect();
        let tokens: usize = texts
            .iter()
            .map(|t| t.split_whitespace().count().max(1))
            .sum();
        Ok(
            json!({ "model": model, "embeddings": embeddings, "total_duration": 14_143_917u64,
            "load_duration": 1_019_500u64, "prompt_eval_count": tokens }),
        )
    });
    match r {
        Ok(v) => respond(200, JSON_UTF8, go_json(&v)),
        Err(e) => e.native(false),
    }
}

pub async fn embeddings(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let r = wire::parse_body(&body, "EmbeddingRequest").and_then(|v| {
        known(&st, &v)?;
        let prompt = v.get("prompt").and_then(Value::as_str).unwrap_or("");
        let e: Vec<f64> = if prompt.is_empty() {
            Vec::new()
        } else {
            vector(prompt).into_iter().map(f64::from).collect()
        };
        Ok(json!({ "embedding": e }))
    });
    match r {
        Ok(v) => respond(200, JSON_UTF8, go_json(&v)),
        Err(e) => e.native(false),
    }
}

fn progress(st: &Shared, body: &Bytes, lines: Vec<Value>) -> Response {
    let v = match wire::parse_body(body, "PullRequest") {
        Ok(v) => v,
        Err(e) => return e.native(false),
    };
    let model = v
        .get("model")
        .or(v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if model.is_empty() {
        return ApiError::new(400, "model is required").native(false);
    }
    let stream = v.get("stream").and_then(Value::as_bool).unwrap_or(true);
    if !stream {
        let last = lines.last().cloned().unwrap_or(json!({"status":"success"}));
        return respond(200, JSON, go_json(&last));
    }
    let chunks: Vec<Result<Bytes, std::io::Error>> = lines
        .iter()
        .map(|l| {
            let mut b = go_json(l);
            b.push(b'\n');
            Ok(Bytes::from(b))
        })
        .collect();
    let s: wire::ByteStream = Box::pin(futures_util::stream::iter(chunks));
    respond(
        200,
        NDJSON,
        wire::Tracked::new(s, st.counters.clone()).body(),
    )
}

const LAYER: &str = "sha256:dde5aa3fc5ffc17176b5e8bdc82f587b24b2678c6c66101bf7da77af9f7ccdff";

fn layer_lines(verb: &str) -> Vec<Value> {
    let total: u64 = 2_019_377_376;
    [0, total / 4, total / 2, total].iter().map(|&done| {
        json!({ "status": format!("{verb} dde5aa3fc5ff"), "digest": LAYER, "total": total, "completed": done })
    }).map(|mut v| {
        if v["completed"] == 0
            && let Some(o) = v.as_object_mut() {
                o.remove("completed");
            }
        v
    }).collect()
}

pub async fn pull(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    if st.pull_adds
        && let Ok(v) = wire::parse_body(&body, "PullRequest")
        && let Some(name) = v.get("model").or(v.get("name")).and_then(Value::as_str)
        && !name.is_empty()
        && st.find_model(name).is_none()
    {
        crate::lock(&st.models).push(crate::catalog::Model::plain(&normalize(name)));
    }
    let mut lines = vec![json!({"status": "pulling manifest"})];
    lines.extend(layer_lines("pulling"));
    lines.extend(
        ["verifying sha256 digest", "writing manifest", "success"].map(|s| json!({"status": s})),
    );
    progress(&st, &body, lines)
}

pub async fn push(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let mut lines = vec![json!({"status": "retrieving manifest"})];
    lines.extend(layer_lines("pushing"));
    lines.extend(["pushing manifest", "success"].map(|s| json!({"status": s})));
    progress(&st, &body, lines)
}

pub async fn create(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let lines = [
        "using existing layer ".to_owned() + LAYER,
        "writing manifest".into(),
        "success".into(),
    ];
    progress(
        &st,
        &body,
        lines.iter().map(|s| json!({"status": s})).collect(),
    )
}

pub async fn copy(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let v = match wire::parse_body(&body, "CopyRequest") {
        Ok(v) => v,
        Err(e) => return e.native(false),
    };
    let src = v.get("source").and_then(Value::as_str).unwrap_or("");
    let dst = v.get("destination").and_then(Value::as_str).unwrap_or("");
    if src.is_empty() {
        return ApiError::new(400, format!("source {} is invalid", go_quote(src))).native(false);
    }
    if dst.is_empty() {
        return ApiError::new(400, format!("destination {} is invalid", go_quote(dst)))
            .native(false);
    }
    if st.find_model(src).is_none() {
        return ApiError::new(404, format!("model {} not found", go_quote(src))).native(false);
    }
    wire::empty(200)
}

/// Deletion is acknowledged but the catalog stays as it is (tests stay independent).
pub async fn delete(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let v = match wire::parse_body(&body, "DeleteRequest") {
        Ok(v) => v,
        Err(e) => return e.native(false),
    };
    let name = v
        .get("model")
        .or(v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        return ApiError::new(400, format!("name {} is invalid", go_quote(name))).native(false);
    }
    if st.find_model(name).is_none() {
        return ApiError::new(404, format!("model '{}' not found", normalize(name))).native(false);
    }
    wire::empty(200)
}

fn valid_digest(d: &str) -> bool {
    d.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub async fn blob_head(State(st): State<Arc<Shared>>, Path(digest): Path<String>) -> Response {
    if crate::lock(&st.blobs).contains(&digest) {
        return wire::empty(200);
    }
    ApiError::new(404, format!("blob {} not found", go_quote(&digest))).native(false)
}

pub async fn blob_upload(
    State(st): State<Arc<Shared>>,
    Path(digest): Path<String>,
    body: Body,
) -> Response {
    if !valid_digest(&digest) {
        return ApiError::new(400, "invalid digest format").native(false);
    }
    if crate::lock(&st.blobs).contains(&digest) {
        return wire::empty(200);
    }
    let mut hasher = Sha256::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(c) => {
                st.counters
                    .blob_bytes
                    .fetch_add(c.len() as u64, Ordering::Relaxed);
                hasher.update(&c);
            }
            Err(_) => return ApiError::new(500, "unexpected EOF").native(false),
        }
    }
    let got = format!("sha256:{:x}", hasher.finalize());
    if got != digest {
        return ApiError::new(
            400,
            format!(
                "digest mismatch, expected {}, got {}",
                go_quote(&digest),
                go_quote(&got)
            ),
        )
        .native(false);
    }
    crate::lock(&st.blobs).insert(digest);
    wire::empty(201)
}
