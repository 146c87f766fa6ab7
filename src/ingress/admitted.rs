//! What admission established about a request ([`Admitted`]: the route,
//! the policy snapshot, the principal, the model, the body), handed to its
//! handler as an extension.

use std::sync::Arc;

use axum::{extract::FromRequestParts, response::Response};
use bytes::Bytes;
use http::request::Parts;

use super::routes::RouteSpec;
use crate::{
    error::{Flavor, ProxyError},
    limits::{Principal, Usage},
    policy::{ModelPolicy, Policy},
    upstream::fleet::Affinity,
};

/// A model a request names: as written, normalized, and its settings.
#[derive(Debug, Clone)]
pub struct Model {
    /// As the client wrote it (sent upstream unchanged).
    pub raw: String,
    /// Normalized (see [`crate::wire::model_name`]): what policies,
    /// allow-lists and limits see.
    pub name: String,
    pub policy: Arc<ModelPolicy>,
}

/// What admission established about a request, for its handler; shared,
/// so handing it on is a reference count.
#[derive(Debug, Clone)]
pub struct Admitted(pub(super) Arc<Facts>);

impl std::ops::Deref for Admitted {
    type Target = Facts;

    fn deref(&self) -> &Facts {
        &self.0
    }
}

/// The facts of an [`Admitted`] request.
#[derive(Debug)]
pub struct Facts {
    pub route: &'static RouteSpec,
    /// The policy snapshot the request runs under from start to end.
    pub policy: Arc<Policy>,
    pub principal: Principal,
    /// The model limits were counted for (the first one the body names).
    pub model: Option<Model>,
    /// The request body, when the route names models (bounded by the limit).
    pub body: Option<Bytes>,
    /// The body holds a field augur may act on (`format`, `tools`, ...).
    pub acted_on: bool,
    /// Token counts reported by augur's own upstream calls.
    pub usage: Arc<Usage>,
    /// The conversation's key, when its model routes by affinity among
    /// several upstreams (see [`affinity`]).
    pub affinity: Option<Affinity>,
}

impl<S: Send + Sync> FromRequestParts<S> for Admitted {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Response> {
        parts.extensions.get::<Admitted>().cloned().ok_or_else(|| {
            let flavor = Flavor::of_path(parts.uri.path());
            ProxyError::Internal("request reached a handler without admission".into())
                .into_response_for(flavor)
        })
    }
}
