//! One bounded `GET` of an upstream's JSON: a probe (`/api/version`) or a
//! listing (`/api/tags`, `/api/ps`), at most [`PROBE_TIMEOUT`] and
//! [`LIST_LIMIT`] bytes.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use crate::upstream::client::Upstream;

/// Longest wait for one probe or listing.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Largest listing read.
const LIST_LIMIT: usize = 8 * 1024 * 1024;

/// `GET path`, its JSON answer (bounded in time and size).
pub(super) async fn get_json(client: &Upstream, path: &str) -> Result<Value, String> {
    let call = async {
        let req = Request::get(path)
            .body(Bytes::new())
            .map_err(|e| e.to_string())?;
        let response = client
            .call(req, None, None)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{path} answered {status}"));
        }
        let bytes = Limited::new(response.into_body(), LIST_LIMIT)
            .collect()
            .await
            .map_err(|e| format!("{path}: {e}"))?
            .to_bytes();
        serde_json::from_slice(&bytes).map_err(|e| format!("{path}: {e}"))
    };
    tokio::time::timeout(PROBE_TIMEOUT, call)
        .await
        .map_err(|_| format!("{path} did not answer within {} s", PROBE_TIMEOUT.as_secs()))?
}
