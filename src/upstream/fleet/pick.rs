//! Which upstream a request goes to: pure functions over what the fleet
//! knows of each upstream at that moment ([`View`]), so the rules can be
//! tested on their own. Upstreams already tried for the request are bits
//! of `tried` (there are at most 64).
//!
//! - A request naming a model: the upstreams known to have it (or, when
//!   none is, those whose models are not known yet); of these the healthy
//!   ones, if any; of these the ones not stalled (no recent request timed
//!   out before its first byte), if any; of these the ones with the model
//!   loaded, if any; then, with an affinity key, the first in the key's
//!   order within the load bound (see [`super::ring`]); else the fewest
//!   requests in flight per unit of weight, then the larger weight, then
//!   the one listed first. Nobody has it: `None`.
//! - Any upstream (`/`, `/api/version`): the same without the model.
//! - The first healthy upstream in the configured order, not stalled if
//!   one is, else the first (management routes: predictable, never by
//!   load).

use super::{member::Has, ring, ring::How};

/// One upstream, as the choice sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View {
    pub healthy: bool,
    /// A request to it timed out before its first byte, recently.
    pub stalled: bool,
    /// Whether it has the model (`Yes` when no model is named).
    pub has: Has,
    /// Whether it has the model loaded.
    pub loaded: bool,
    pub in_flight: u64,
    pub weight: u32,
    /// Its name's stable hash (its place on the affinity ring).
    pub id: u64,
}

impl View {
    /// An empty or draining slot (its bit is also set in `tried`).
    pub(crate) const CLOSED: View = View {
        healthy: false,
        stalled: false,
        has: Has::No,
        loaded: false,
        in_flight: 0,
        weight: 1,
        id: 0,
    };
}

/// A request's affinity: its key, and how far over its share of the load
/// its home upstream may go (`affinity.epsilon`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affinity {
    pub key: u64,
    pub epsilon: f64,
}

fn untried(tried: u64) -> impl Fn(&(usize, &View)) -> bool {
    move |(i, _)| *i >= 64 || tried & (1u64 << i) == 0
}

/// The bit of upstream `i` in a `tried` set.
pub(crate) fn bit(i: usize) -> u64 {
    if i < 64 { 1u64 << i } else { 0 }
}

/// For a request naming a model; `None` when no untried upstream has it.
#[cfg(test)]
pub(crate) fn for_model(views: &[View], tried: u64) -> Option<usize> {
    for_model_by(views, tried, None).map(|(i, _)| i)
}

/// [`for_model`], in `affinity`'s order when there is one; and how the
/// upstream was chosen.
pub(crate) fn for_model_by(
    views: &[View],
    tried: u64,
    affinity: Option<Affinity>,
) -> Option<(usize, How)> {
    let open = || views.iter().enumerate().filter(untried(tried));
    let best = open().map(|(_, v)| v.has).max()?;
    if best == Has::No {
        return None;
    }
    let mut pool: Vec<(usize, &View)> = open().filter(|(_, v)| v.has == best).collect();
    if pool.iter().any(|(_, v)| v.healthy) {
        pool.retain(|(_, v)| v.healthy);
    }
    if pool.iter().any(|(_, v)| !v.stalled) {
        pool.retain(|(_, v)| !v.stalled);
    }
    if pool.iter().any(|(_, v)| v.loaded) {
        pool.retain(|(_, v)| v.loaded);
    }
    match affinity {
        Some(a) if pool.len() > 1 => ring::choose(a.key, a.epsilon, &seats(&pool)),
        _ => least_loaded(pool.into_iter()).map(|i| (i, How::LeastLoaded)),
    }
}

/// The candidates as the ring sees them.
fn seats(pool: &[(usize, &View)]) -> Vec<ring::Seat> {
    pool.iter()
        .map(|&(index, v)| ring::Seat {
            index,
            id: v.id,
            weight: v.weight,
            in_flight: v.in_flight,
        })
        .collect()
}

/// Any untried upstream, healthy ones first, then ones not stalled, the
/// least loaded.
pub(crate) fn any(views: &[View], tried: u64) -> Option<usize> {
    let mut pool: Vec<(usize, &View)> = views.iter().enumerate().filter(untried(tried)).collect();
    if pool.iter().any(|(_, v)| v.healthy) {
        pool.retain(|(_, v)| v.healthy);
    }
    if pool.iter().any(|(_, v)| !v.stalled) {
        pool.retain(|(_, v)| !v.stalled);
    }
    least_loaded(pool.into_iter())
}

/// The first healthy untried upstream not stalled in the configured order,
/// else the first healthy one, else the first untried one.
pub(crate) fn first(views: &[View], tried: u64) -> Option<usize> {
    let open = || views.iter().enumerate().filter(untried(tried));
    open()
        .find(|(_, v)| v.healthy && !v.stalled)
        .or_else(|| open().find(|(_, v)| v.healthy))
        .or_else(|| open().next())
        .map(|(i, _)| i)
}

/// The fewest in flight per unit of weight; then the larger weight; then
/// the one listed first.
fn least_loaded<'a>(pool: impl Iterator<Item = (usize, &'a View)>) -> Option<usize> {
    pool.min_by(|(i, a), (j, b)| {
        let left = u128::from(a.in_flight) * u128::from(b.weight.max(1));
        let right = u128::from(b.in_flight) * u128::from(a.weight.max(1));
        left.cmp(&right)
            .then(b.weight.cmp(&a.weight))
            .then(i.cmp(j))
    })
    .map(|(i, _)| i)
}

#[cfg(test)]
#[path = "pick_tests.rs"]
mod tests;
