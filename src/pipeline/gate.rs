//! Stages 2-3 for every route: authenticate, then admit under the rate,
//! token and concurrency limits of the request's policy snapshot.
//!
//! The admission (holding a concurrency permit) lives as long as the
//! response body, so a stream counts as in flight until its last byte.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use http::{Method, request::Parts};
use http_body::{Body as HttpBody, Frame, SizeHint};

use crate::{app::AppState, error::ProxyError};

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
            "/api/tags" | "/api/version" | "/v1/models" => RouteClass::Meta,
            "/api/show" => RouteClass::Meta,
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

/// Proof that a request was admitted; dropping it releases its slot.
#[derive(Default)]
pub struct Admission {
    _held: Vec<Box<dyn Send + Sync>>,
}

/// Authenticate and admit a request for `model`.
pub async fn admit(
    state: &AppState,
    parts: &Parts,
    class: RouteClass,
    model: Option<&str>,
) -> Result<Admission, ProxyError> {
    let _ = (state, parts, class, model);
    Ok(Admission::default())
}

/// Keep `admission` alive until the response body is finished or dropped.
pub fn hold_until_done(response: Response, admission: Admission) -> Response {
    let (parts, body) = response.into_parts();
    Response::from_parts(
        parts,
        Body::new(HeldBody {
            inner: body,
            _admission: admission,
        }),
    )
}

pin_project_lite::pin_project! {
    struct HeldBody {
        #[pin]
        inner: Body,
        _admission: Admission,
    }
}

impl HttpBody for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
