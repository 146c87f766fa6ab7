//! Stages 2-3 for every route: authenticate, then admit under the rate,
//! token and concurrency limits of the request's policy snapshot.
//!
//! The admission (holding a concurrency slot) lives as long as the
//! response body, so a stream counts as in flight until its last byte;
//! token budgets are charged from the counts at the end of the answer.

use std::{
    net::{IpAddr, Ipv4Addr},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use http::{Method, request::Parts};
use http_body::{Body as HttpBody, Frame, SizeHint};

use crate::{
    app::AppState,
    error::ProxyError,
    limits::{self, LimitError, Principal},
    policy::Policy,
    telemetry::Timing,
    upstream::ClientInfo,
};

/// What a route means for auth and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteClass {
    /// GET/HEAD `/`: liveness probes, never authenticated.
    Liveness,
    /// `/api/tags`, `/api/version`, `/api/show`: need a key, not counted.
    Meta,
    /// Routes whose JSON body names a model that is limited.
    Model,
    /// Anything else: needs a key when auth is required.
    Other,
}

impl RouteClass {
    /// Classify a request.
    pub fn of(method: &Method, path: &str) -> Self {
        match path {
            "/" if method == Method::GET || method == Method::HEAD => RouteClass::Liveness,
            "/api/tags" | "/api/version" | "/v1/models" | "/api/show" => RouteClass::Meta,
            "/api/chat"
            | "/api/generate"
            | "/api/embed"
            | "/api/embeddings"
            | "/api/pull"
            | "/api/push"
            | "/api/create"
            | "/api/copy"
            | "/api/delete"
            | "/v1/chat/completions"
            | "/v1/completions"
            | "/v1/embeddings"
            | "/v1/responses"
            | "/v1/messages"
                if method == Method::POST || method == Method::DELETE =>
            {
                RouteClass::Model
            }
            _ => RouteClass::Other,
        }
    }

    /// Whether the body must be read to learn the model.
    pub fn reads_model(self) -> bool {
        matches!(self, RouteClass::Model)
    }
}

impl From<LimitError> for ProxyError {
    fn from(e: LimitError) -> Self {
        ProxyError::Limited {
            status: e.status(),
            message: e.message(),
            headers: e.headers(),
        }
    }
}

/// Proof that a request was admitted; dropping it releases its slot.
#[derive(Default)]
pub struct Admission {
    inner: Option<limits::Admission>,
    principal: Option<Principal>,
}

impl Admission {
    /// Who sent the request ("anonymous" when unauthenticated).
    pub fn principal_label(&self) -> String {
        self.principal
            .as_ref()
            .map(|p| p.label().to_string())
            .unwrap_or_else(|| "anonymous".to_string())
    }
}

/// Authenticate and admit a request for `model` under `policy`, the one
/// snapshot the request runs under from start to end.
pub async fn admit(
    state: &AppState,
    policy: &Policy,
    parts: &Parts,
    class: RouteClass,
    model: Option<&str>,
) -> Result<Admission, ProxyError> {
    if class == RouteClass::Liveness {
        return Ok(Admission::default());
    }
    let ip = parts
        .extensions
        .get::<ClientInfo>()
        .map(|c| c.ip)
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let path = parts.uri.path();
    let principal = if limits::route_needs_key(&parts.method, path) {
        state.limits.authenticate(policy, &parts.headers, ip)?
    } else {
        Principal::anonymous(ip)
    };
    if let Some(t) = parts.extensions.get::<Arc<Timing>>() {
        t.set_principal(principal.label());
    }
    let counts = class == RouteClass::Model && limits::route_counts(path);
    let admitted = state
        .limits
        .admit(policy, &principal, model, counts)
        .await?;
    Ok(Admission {
        inner: Some(admitted),
        principal: Some(principal),
    })
}

/// Keep `admission` alive until the response body is finished or dropped;
/// attach its rate-limit headers; charge token budgets from the answer.
pub fn hold_until_done(response: Response, admission: Admission) -> Response {
    let (mut parts, body) = response.into_parts();
    let charges = admission
        .inner
        .as_ref()
        .is_some_and(limits::Admission::charges_tokens);
    if let Some(a) = &admission.inner
        && a.rate_info().is_some()
    {
        parts.headers.extend(a.rate_headers());
    }
    let holds = admission
        .inner
        .as_ref()
        .is_some_and(|a| a.holds_slot() || a.charges_tokens());
    if !holds {
        // No slot to release and no budget to charge: nothing to wait for.
        return Response::from_parts(parts, body);
    }
    Response::from_parts(
        parts,
        Body::new(HeldBody {
            inner: body,
            admission,
            tail: charges.then(Vec::new),
        }),
    )
}

/// How much of the end of an answer is kept to read its token counts.
const TAIL: usize = 4096;

pin_project_lite::pin_project! {
    struct HeldBody {
        #[pin]
        inner: Body,
        admission: Admission,
        tail: Option<Vec<u8>>,
    }
}

impl HttpBody for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        if let Some(tail) = this.tail.as_mut() {
            let ended = match &polled {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        tail.extend_from_slice(data);
                        if tail.len() > TAIL {
                            let cut = tail.len() - TAIL;
                            tail.drain(..cut);
                        }
                    }
                    // A body of known length is not polled past its last
                    // frame (hyper stops at `is_end_stream`), so its end
                    // must be noticed here.
                    this.inner.is_end_stream()
                }
                Poll::Ready(None) => true,
                _ => false,
            };
            if ended {
                let tokens = token_counts(tail);
                // `charge_tokens` counts augur_tokens_charged_total.
                if let Some(a) = &this.admission.inner {
                    a.charge_tokens(tokens);
                }
                *this.tail = None;
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Prompt plus generated tokens from the end of an Ollama or OpenAI answer.
pub fn token_counts(tail: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(tail);
    let last = |key: &str| -> u64 {
        text.rfind(key)
            .map(|i| &text[i + key.len()..])
            .map(|rest| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|digits| digits.parse().ok())
            .unwrap_or(0)
    };
    let ollama = last("\"prompt_eval_count\":") + last("\"eval_count\":");
    if ollama > 0 {
        return ollama;
    }
    last("\"prompt_tokens\":") + last("\"completion_tokens\":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_come_from_the_done_chunk_or_usage() {
        let done = br#"{"done":true,"prompt_eval_count":26,"prompt_eval_duration":3,"eval_count":282,"eval_duration":4}"#;
        assert_eq!(token_counts(done), 308);
        let usage = br#"{"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;
        assert_eq!(token_counts(usage), 12);
        assert_eq!(token_counts(b"{}"), 0);
    }

    /// A whole answer (one frame, known length) is charged at its last
    /// frame: hyper does not poll such a body again to see its end.
    #[tokio::test]
    async fn a_whole_answer_is_charged_without_polling_past_its_end() {
        use http_body_util::BodyExt;

        let mut policy = crate::policy::Policy::permissive();
        policy.default_rate_limit = Some(crate::policy::RateLimit {
            tokens_per_minute: Some(1000),
            ..Default::default()
        });
        let limits = limits::Limits::new();
        let who = Principal::anonymous(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let inner = limits.admit(&policy, &who, Some("m"), true).await.unwrap();
        let admission = Admission {
            inner: Some(inner),
            principal: Some(who.clone()),
        };
        let answer = r#"{"done":true,"prompt_eval_count":26,"eval_count":282}"#;
        let response = hold_until_done(Response::new(Body::from(answer)), admission);
        let mut body = response.into_body();
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), answer.as_bytes());
        assert!(body.is_end_stream());
        let left = limits.token_balance(&policy, &who).unwrap();
        assert!((690.0..=693.0).contains(&left), "{left}");
    }

    #[test]
    fn routes_are_classified() {
        assert_eq!(RouteClass::of(&Method::GET, "/"), RouteClass::Liveness);
        assert_eq!(RouteClass::of(&Method::POST, "/api/show"), RouteClass::Meta);
        assert_eq!(
            RouteClass::of(&Method::POST, "/api/chat"),
            RouteClass::Model
        );
        assert_eq!(RouteClass::of(&Method::GET, "/api/chat"), RouteClass::Other);
    }
}
