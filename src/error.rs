//! One error type for the request path, one status table, one place that
//! turns errors into responses.
//!
//! Bodies use Ollama's shape `{"error": "..."}` on native routes, the
//! OpenAI shape `{"error": {"message", "type", "param", "code"}}` under
//! `/v1/`, and Anthropic's `{"type": "error", "error": {"type", "message"},
//! "request_id"}` on `/v1/messages`, with the error types Ollama's own
//! OpenAI and Anthropic layers give each status. Internal details never
//! reach the client; they are logged.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;

pub(crate) use crate::ending::Ending;
pub(crate) use crate::wire::upstream_error::UpstreamKind;

/// Which error body shape a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    #[default]
    Ollama,
    OpenAi,
    Anthropic,
}

impl Flavor {
    /// The flavor of a request path.
    pub fn of_path(path: &str) -> Self {
        if path == "/v1/messages" || path.starts_with("/v1/messages/") {
            Flavor::Anthropic
        } else if path.starts_with("/v1/") {
            Flavor::OpenAi
        } else {
            Flavor::Ollama
        }
    }
}

/// Anthropic's error type for a status, as Ollama's Anthropic layer maps it.
pub(crate) fn anthropic_error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

impl ProxyError {
    /// An error the upstream answered with `status` and `message`.
    pub fn upstream(status: StatusCode, message: String) -> Self {
        let kind = crate::wire::upstream_error::classify(status, &message);
        ProxyError::Upstream {
            status,
            message,
            kind,
        }
    }
}

/// Everything that can go wrong between the client and the upstream.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The upstream refused the connection or is down.
    #[error("upstream unavailable: {0}")]
    UpstreamUnavailable(String),
    /// The upstream closed the connection before its answer was complete.
    #[error("{0}")]
    UpstreamCut(String),
    /// The upstream did not answer in time.
    #[error("upstream timed out after {0} ms")]
    UpstreamTimeout(u128),
    /// The upstream answered something augur cannot use.
    #[error("invalid upstream response: {0}")]
    UpstreamProtocol(String),
    /// An error the upstream itself answered, relayed with its status;
    /// `kind` says what it means (classified once, where it arrived).
    #[error("{message}")]
    Upstream {
        status: StatusCode,
        message: String,
        kind: UpstreamKind,
    },
    /// The request body exceeds the configured limit.
    #[error("request body too large (limit {0} bytes)")]
    BodyTooLarge(u64),
    /// The request's head (request line and header fields) is over
    /// augur's bounds (see `ingress::head`).
    #[error(
        "request header fields too large: at most {max_bytes} bytes and {max_fields} fields \
         are accepted"
    )]
    HeadersTooLarge { max_bytes: usize, max_fields: usize },
    /// The client was too slow sending its request.
    #[error("timed out reading the request")]
    ClientTimeout,
    /// A request augur itself rejects (e.g. a `format` that cannot be fixed).
    #[error("{0}")]
    BadRequest(String),
    /// A client schema over the schema budget or unusable, found before
    /// any model call; `what` says which ("format", a tool).
    #[error("{what} schema {source}")]
    Schema {
        what: String,
        source: crate::validate::SchemaRejected,
    },
    /// The `format` augur would send upstream exceeds `format_limit_bytes`.
    #[error(
        "format too large: the schema sent upstream would be {size} bytes, \
         more than format_limit_bytes ({limit})"
    )]
    FormatTooLarge { size: u64, limit: u64 },
    /// The answer still violates the schema after the last attempt.
    #[error("{0}")]
    Unprocessable(String),
    /// Auth, rate, token or concurrency limits.
    #[error("{message}")]
    Limited {
        status: StatusCode,
        message: String,
        headers: HeaderMap,
    },
    /// A bug or an impossible state; details are logged, not sent.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ProxyError {
    /// The HTTP status for this error (the one status table).
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::UpstreamUnavailable(_)
            | ProxyError::UpstreamCut(_)
            | ProxyError::UpstreamProtocol(_) => StatusCode::BAD_GATEWAY,
            ProxyError::UpstreamTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::Upstream { status, .. } => *status,
            ProxyError::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ProxyError::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ProxyError::ClientTimeout => StatusCode::REQUEST_TIMEOUT,
            ProxyError::BadRequest(_)
            | ProxyError::Schema { .. }
            | ProxyError::FormatTooLarge { .. } => StatusCode::BAD_REQUEST,
            ProxyError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ProxyError::Limited { status, .. } => *status,
            ProxyError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether the upstreams failed to answer at all: unreachable, reset,
    /// timed out, unreadable, or a server error of theirs (a schema their
    /// converter rejected is the request's, not theirs).
    pub fn is_upstream_failure(&self) -> bool {
        match self {
            ProxyError::UpstreamUnavailable(_)
            | ProxyError::UpstreamCut(_)
            | ProxyError::UpstreamTimeout(_)
            | ProxyError::UpstreamProtocol(_) => true,
            ProxyError::Upstream { status, kind, .. } => {
                status.is_server_error() && *kind != UpstreamKind::SchemaRejected
            }
            _ => false,
        }
    }

    /// How a request that fails with this error ends (the one table of
    /// endings, beside the one of statuses).
    pub fn ending(&self) -> Ending {
        match self {
            ProxyError::UpstreamCut(_) => Ending::UpstreamCut,
            ProxyError::UpstreamTimeout(_) => Ending::TimedOut,
            ProxyError::UpstreamUnavailable(_)
            | ProxyError::UpstreamProtocol(_)
            | ProxyError::Upstream { .. }
            | ProxyError::Internal(_) => Ending::Error,
            ProxyError::Unprocessable(_)
            | ProxyError::BodyTooLarge(_)
            | ProxyError::HeadersTooLarge { .. }
            | ProxyError::ClientTimeout
            | ProxyError::BadRequest(_)
            | ProxyError::Schema { .. }
            | ProxyError::FormatTooLarge { .. }
            | ProxyError::Limited { .. } => Ending::Refused,
        }
    }

    /// The message sent to the client.
    pub fn client_message(&self) -> String {
        match self {
            ProxyError::Internal(_) => "internal error".to_string(),
            other => other.to_string(),
        }
    }

    /// The response in the given flavor.
    pub fn into_response_for(self, flavor: Flavor) -> Response {
        let status = self.status();
        let message = self.client_message();
        let ending = self.ending();
        let extra = match &self {
            ProxyError::Limited { headers, .. } => Some(headers.clone()),
            _ => None,
        };
        if status.is_server_error() {
            tracing::warn!(error = %self, status = status.as_u16(), "request failed");
        }
        let mut response = error_response(status, &message, flavor);
        if let Some(headers) = extra {
            response.headers_mut().extend(headers);
        }
        response.extensions_mut().insert(ending);
        response
    }

    /// The NDJSON line a stream ends with when this error happens mid-stream.
    pub fn stream_line(&self) -> bytes::Bytes {
        error_line(&self.client_message())
    }
}

/// A handler's error on its way out: rendered in Ollama's shape, and
/// again in its route's shape by admission ([`shaped`]), which knows the
/// route.
#[derive(Debug, Clone)]
struct Unshaped {
    status: StatusCode,
    message: String,
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let unshaped = Unshaped {
            status: self.status(),
            message: self.client_message(),
        };
        let mut response = self.into_response_for(Flavor::Ollama);
        response.extensions_mut().insert(unshaped);
        response
    }
}

/// `response` in `flavor`'s error shape when it is a handler's error
/// ([`ProxyError`]'s `into_response`); any other response unchanged.
pub(crate) fn shaped(response: Response, flavor: Flavor) -> Response {
    let Some(unshaped) = response.extensions().get::<Unshaped>().cloned() else {
        return response;
    };
    if flavor == Flavor::Ollama {
        return response;
    }
    let mut out = error_response(unshaped.status, &unshaped.message, flavor);
    if let Some(ending) = response.extensions().get::<Ending>() {
        out.extensions_mut().insert(*ending);
    }
    for (name, value) in response.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}

/// The JSON error body for `message` in `flavor`.
pub(crate) fn error_body(status: StatusCode, message: &str, flavor: Flavor) -> String {
    let value = match flavor {
        Flavor::Ollama => json!({ "error": message }),
        Flavor::OpenAi => {
            let kind = match status {
                StatusCode::BAD_REQUEST => "invalid_request_error",
                StatusCode::NOT_FOUND => "not_found_error",
                _ => "api_error",
            };
            json!({ "error": { "message": message, "type": kind, "param": null, "code": null } })
        }
        Flavor::Anthropic => json!({
            "type": "error",
            "error": { "type": anthropic_error_type(status), "message": message },
            "request_id": format!("req_{}", uuid::Uuid::new_v4().simple()),
        }),
    };
    crate::wire::to_go_json(&value)
}

/// An error response: status, JSON body in the route's shape.
pub(crate) fn error_response(status: StatusCode, message: &str, flavor: Flavor) -> Response {
    let body = error_body(status, message, flavor);
    let mut response = (status, body).into_response();
    let content_type = match flavor {
        Flavor::Ollama => "application/json; charset=utf-8",
        Flavor::OpenAi | Flavor::Anthropic => "application/json",
    };
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// `{"error": "..."}\n`: how an NDJSON stream reports a failure mid-way.
pub(crate) fn error_line(message: &str) -> bytes::Bytes {
    let mut line = crate::wire::to_go_json(&json!({ "error": message }));
    line.push('\n');
    bytes::Bytes::from(line)
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
