//! The choice of an upstream for a request: the one `X-Augur-Upstream`
//! names, else the best for its target (see [`super::pick`]), counted in
//! `augur_routing_decisions_total`.

use http::HeaderMap;

use super::{
    member::{self, Member},
    pick,
    seat::Seat,
    state::Fleet,
    target::{Target, X_AUGUR_UPSTREAM},
};
use crate::error::ProxyError;

impl Fleet {
    /// The upstream a request with `headers` for `target` goes to first:
    /// the one `X-Augur-Upstream` names, else the best for the target.
    pub fn choose(&self, headers: &HeaderMap, target: &Target) -> Result<usize, ProxyError> {
        if let Some(i) = self.pinned(headers)? {
            self.count(target, "pinned");
            return Ok(i);
        }
        Ok(self.pick(target, 0).unwrap_or(0))
    }

    /// The index `X-Augur-Upstream` names; a name not configured is 400.
    pub(super) fn pinned(&self, headers: &HeaderMap) -> Result<Option<usize>, ProxyError> {
        let Some(value) = headers.get(&X_AUGUR_UPSTREAM) else {
            return Ok(None);
        };
        let name = value.to_str().unwrap_or_default().trim();
        self.seats
            .iter()
            .position(|s| s.open().is_some_and(|m| m.name() == name))
            .map(Some)
            .ok_or_else(|| {
                let shown: String = String::from_utf8_lossy(value.as_bytes())
                    .chars()
                    .take(64)
                    .collect();
                ProxyError::BadRequest(format!("X-Augur-Upstream: no upstream is named {shown:?}"))
            })
    }

    /// The best untried upstream for `target` (see [`pick`]). A model
    /// nobody has goes to the first healthy upstream, which answers with
    /// Ollama's own "not found".
    pub(super) fn pick(&self, target: &Target, tried: u64) -> Option<usize> {
        if self.is_single() {
            return (tried == 0).then_some(0);
        }
        match target {
            Target::Model {
                name,
                prefer,
                affinity,
            } => {
                if let Some(p) = *prefer
                    && tried & pick::bit(p) == 0
                    && let Some(m) = self.seats.get(p).and_then(Seat::open)
                    && m.healthy()
                    && !m.is_stalled()
                    && m.has(name) != member::Has::No
                {
                    return Some(p);
                }
                let (views, closed) = self.views(Some(name));
                match pick::for_model_by(&views, tried | closed, *affinity) {
                    Some((i, how)) => {
                        if tried == 0 {
                            self.count(target, how.label());
                        }
                        Some(i)
                    }
                    None => (tried == 0).then(|| pick::first(&views, closed)).flatten(),
                }
            }
            Target::Any => {
                let (views, closed) = self.views(None);
                pick::any(&views, tried | closed)
            }
            Target::First => {
                let (views, closed) = self.views(None);
                pick::first(&views, tried | closed)
            }
        }
    }

    /// Count a choice of upstream for a model some upstream has (the
    /// label's values stay within the fleet's models).
    pub(super) fn count(&self, target: &Target, how: &'static str) {
        let Target::Model { name, .. } = target else {
            return;
        };
        if self.is_single() || !self.open().any(|(m, _)| m.has(name) == member::Has::Yes) {
            return;
        }
        metrics::counter!("augur_routing_decisions_total", "model" => name.clone(), "how" => how)
            .increment(1);
    }

    /// What the choice needs to know of each upstream now, and the
    /// upstreams closed to new requests (empty or draining slots: bits as
    /// in `tried`).
    pub(super) fn views(&self, model: Option<&str>) -> (Vec<pick::View>, u64) {
        let view = |m: &Member| pick::View {
            healthy: m.healthy(),
            stalled: m.is_stalled(),
            has: model.map_or(member::Has::Yes, |name| m.has(name)),
            loaded: model.is_some_and(|name| m.has_loaded(name)),
            in_flight: m.in_flight(),
            weight: m.spec.weight,
            id: m.id(),
        };
        let mut closed = 0u64;
        let views = self
            .seats
            .iter()
            .enumerate()
            .map(|(i, seat)| match seat {
                Seat::Fixed(m) => view(m),
                Seat::Slot(_) => match seat.open() {
                    Some(m) => view(&m),
                    None => {
                        closed |= pick::bit(i);
                        pick::View::CLOSED
                    }
                },
            })
            .collect();
        (views, closed)
    }
}
