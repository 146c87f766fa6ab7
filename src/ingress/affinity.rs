//! The affinity of an admitted generation request: which conversation it
//! belongs to, as a key the fleet orders its upstreams by (see
//! `wire::affinity` for the key, `upstream::fleet::ring` for the order).
//!
//! Read from the body admission already holds, once, and only when it can
//! matter: the model's policy routes by affinity and there is more than one
//! upstream. Otherwise nothing is read and the request has no key.

use http::request::Parts;

use crate::{
    limits::Principal,
    policy::{Routing, Session},
    upstream::fleet::{Affinity, X_AUGUR_SESSION},
    wire::affinity::{self, Shape},
};

use super::admitted::Model;

/// The affinity of the request with head `parts` and `body`, when its
/// model routes by affinity among `several` upstreams and the request is a
/// generation with a conversation to key.
pub(super) fn of(
    parts: &Parts,
    body: Option<&[u8]>,
    principal: &Principal,
    model: Option<&Model>,
    several: bool,
) -> Option<Affinity> {
    let routing = model?.policy.routing;
    if !several || routing.routing != Routing::Affinity {
        return None;
    }
    let shape = Shape::of_path(parts.uri.path())?;
    let header = || {
        parts
            .headers
            .get(&X_AUGUR_SESSION)
            .map(|v| v.as_bytes())
            .filter(|v| !v.is_empty())
            .map(|v| affinity::session(&String::from_utf8_lossy(v)))
    };
    let key = match routing.session {
        Session::Header => header().or_else(|| affinity::prefix(shape, body?)),
        Session::Principal => {
            header().or_else(|| Some(affinity::session(&principal.limiter_key())))
        }
        Session::Prefix => affinity::prefix(shape, body?),
    }?;
    Some(Affinity {
        key,
        epsilon: routing.epsilon,
    })
}
