//! `routing:` and `affinity:`: how a model's requests are spread over the
//! upstreams that have it (docs/fleet.md, "Affinity").
//!
//! `routing: affinity` (the default) sends every turn of a conversation to
//! the same upstream while that one is within `affinity.epsilon` of its
//! share of the load, so that it finds the conversation's prompt in its
//! cache; `least_loaded` sends each request to the least loaded one. With
//! one upstream that has the model, the two are the same.

use super::{
    error::PolicyError,
    raw::{RawAffinity, RawSettings},
};

/// `routing:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// By the conversation's key, within a bound on load.
    #[default]
    Affinity,
    /// The fewest requests in flight per unit of weight.
    LeastLoaded,
}

/// `affinity.session`: what stands for the conversation's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Session {
    /// The `X-Augur-Session` header when sent, else the prefix.
    #[default]
    Header,
    /// The header when sent, else the API key (or the address of a client
    /// without one): every conversation of a key on one upstream.
    Principal,
    /// Always the prefix; the header is ignored.
    Prefix,
}

/// The default `affinity.epsilon`.
pub(crate) const DEFAULT_EPSILON: f64 = 0.25;

/// The largest `affinity.epsilon` accepted.
const MAX_EPSILON: f64 = 100.0;

/// A model's routing, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoutingPolicy {
    pub routing: Routing,
    /// How far over its share of the load a conversation's upstream may go
    /// before the next one takes the request.
    pub epsilon: f64,
    pub session: Session,
}

impl Default for RoutingPolicy {
    fn default() -> Self {
        Self {
            routing: Routing::Affinity,
            epsilon: DEFAULT_EPSILON,
            session: Session::Header,
        }
    }
}

/// What one `defaults:` or `models.<glob>:` block sets of the routing.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoutingOverlay {
    pub routing: Option<Routing>,
    pub epsilon: Option<f64>,
    pub session: Option<Session>,
}

/// Read a block's `routing:` and `affinity:`.
pub(super) fn overlay(
    file: &str,
    at: &str,
    s: &RawSettings,
) -> Result<RoutingOverlay, PolicyError> {
    let mut o = RoutingOverlay::default();
    if let Some(r) = &s.routing {
        o.routing = Some(match r.as_str() {
            "affinity" => Routing::Affinity,
            "least_loaded" => Routing::LeastLoaded,
            other => return Err(unknown(file, &format!("{at}.routing"), other)),
        });
    }
    let Some(RawAffinity { epsilon, session }) = &s.affinity else {
        return Ok(o);
    };
    if let Some(e) = *epsilon {
        if !(0.0..=MAX_EPSILON).contains(&e) {
            let msg = format!("a number from 0 to {MAX_EPSILON}");
            return Err(PolicyError::invalid(
                file,
                format!("{at}.affinity.epsilon"),
                msg,
            ));
        }
        o.epsilon = Some(e);
    }
    if let Some(k) = session {
        o.session = Some(match k.as_str() {
            "header" => Session::Header,
            "principal" => Session::Principal,
            "prefix" => Session::Prefix,
            other => return Err(unknown(file, &format!("{at}.affinity.session"), other)),
        });
    }
    Ok(o)
}

fn unknown(file: &str, at: &str, value: &str) -> PolicyError {
    PolicyError::invalid(file, at, format!("unknown value {value:?}"))
}

impl RoutingOverlay {
    /// Apply this block's routing over `p`, key by key.
    pub(super) fn apply(&self, p: &mut RoutingPolicy) {
        if let Some(r) = self.routing {
            p.routing = r;
        }
        if let Some(e) = self.epsilon {
            p.epsilon = e;
        }
        if let Some(s) = self.session {
            p.session = s;
        }
    }
}
