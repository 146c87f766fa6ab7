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
mod tests {
    use super::*;

    fn view(healthy: bool, has: Has, loaded: bool, in_flight: u64, weight: u32) -> View {
        View {
            healthy,
            stalled: false,
            has,
            loaded,
            in_flight,
            weight,
            id: 0,
        }
    }

    #[test]
    fn a_model_goes_where_it_is_loaded_then_to_the_least_loaded() {
        let v = [
            view(true, Has::Yes, false, 0, 1),
            view(true, Has::Yes, true, 5, 1),
            view(true, Has::No, true, 0, 1),
        ];
        assert_eq!(for_model(&v, 0), Some(1));
        // Loaded elsewhere was tried: the other one that has it.
        assert_eq!(for_model(&v, bit(1)), Some(0));
        assert_eq!(for_model(&v, bit(0) | bit(1)), None);
        let idle = [
            view(true, Has::Yes, false, 3, 1),
            view(true, Has::Yes, false, 1, 1),
        ];
        assert_eq!(for_model(&idle, 0), Some(1));
    }

    #[test]
    fn load_is_weighed_and_ties_go_to_the_heavier_then_the_first() {
        let v = [
            view(true, Has::Yes, false, 2, 1),
            view(true, Has::Yes, false, 3, 2),
        ];
        // 2/1 against 3/2.
        assert_eq!(for_model(&v, 0), Some(1));
        let tie = [
            view(true, Has::Yes, false, 0, 1),
            view(true, Has::Yes, false, 0, 3),
            view(true, Has::Yes, false, 0, 3),
        ];
        assert_eq!(for_model(&tie, 0), Some(1));
        assert_eq!(any(&tie, 0), Some(1));
    }

    #[test]
    fn unhealthy_upstreams_are_used_only_when_nothing_else_has_the_model() {
        let v = [
            view(false, Has::Yes, true, 0, 1),
            view(true, Has::Yes, false, 9, 1),
            view(true, Has::Maybe, false, 0, 1),
        ];
        assert_eq!(for_model(&v, 0), Some(1));
        assert_eq!(for_model(&v, bit(1)), Some(0));
        // Nobody known to have it: an upstream whose models are unknown.
        assert_eq!(for_model(&v, bit(0) | bit(1)), Some(2));
        let none = [view(true, Has::No, false, 0, 1)];
        assert_eq!(for_model(&none, 0), None);
    }

    #[test]
    fn a_stalled_upstream_is_ranked_after_the_others_even_with_the_model_loaded() {
        let stalled = View {
            stalled: true,
            ..view(true, Has::Yes, true, 0, 1)
        };
        let v = [stalled, view(true, Has::Yes, false, 5, 1)];
        assert_eq!(for_model(&v, 0), Some(1));
        assert_eq!(any(&v, 0), Some(1));
        assert_eq!(first(&v, 0), Some(1));
        // Nothing else left: the stalled one.
        assert_eq!(for_model(&v, bit(1)), Some(0));
        assert_eq!(any(&v, bit(1)), Some(0));
        assert_eq!(first(&v, bit(1)), Some(0));
        // Unhealthy is worse than stalled.
        let v = [stalled, view(false, Has::Yes, false, 0, 1)];
        assert_eq!(for_model(&v, 0), Some(0));
        assert_eq!(first(&v, 0), Some(0));
    }

    #[test]
    fn the_first_rule_is_the_configured_order() {
        let v = [
            view(false, Has::Yes, false, 0, 1),
            view(true, Has::Yes, false, 7, 1),
            view(true, Has::Yes, false, 0, 5),
        ];
        assert_eq!(first(&v, 0), Some(1));
        assert_eq!(first(&v, bit(1)), Some(2));
        assert_eq!(first(&v, bit(1) | bit(2)), Some(0));
        assert_eq!(first(&v, bit(0) | bit(1) | bit(2)), None);
        assert_eq!(any(&v, 0), Some(2));
    }

    fn named(names: &[&str]) -> Vec<View> {
        names
            .iter()
            .map(|n| View {
                id: crate::wire::affinity::stable_hash(n.as_bytes()),
                ..view(true, Has::Yes, true, 0, 1)
            })
            .collect()
    }

    #[test]
    fn pick_uses_the_ring_after_the_filters_and_fails_over_in_its_order() {
        let mut v = named(&["a", "b", "c"]);
        let key = crate::wire::affinity::session("x");
        let a = Affinity { key, epsilon: 0.25 };
        let ranked: Vec<usize> =
            ring::order(key, &seats(&v.iter().enumerate().collect::<Vec<_>>()))
                .iter()
                .map(|s| s.index)
                .collect();
        let by = |v: &[View], tried| for_model_by(v, tried, Some(a)).map(|c| c.0);
        assert_eq!(by(&v, 0), Some(ranked[0]));
        assert_eq!(by(&v, bit(ranked[0])), Some(ranked[1]));
        let two = bit(ranked[0]) | bit(ranked[1]);
        assert_eq!(by(&v, two), Some(ranked[2]));
        // Health comes first: the home is unhealthy, the next one takes it.
        v[ranked[0]].healthy = false;
        assert_eq!(by(&v, 0), Some(ranked[1]));
        // One candidate left: least loaded, as without affinity.
        let one = &v[ranked[1]..=ranked[1]];
        assert_eq!(for_model_by(one, 0, Some(a)), Some((0, How::LeastLoaded)));
        // No key: least loaded.
        v[ranked[0]].healthy = true;
        v[0].in_flight = 3;
        v[1].in_flight = 1;
        v[2].in_flight = 2;
        assert_eq!(for_model_by(&v, 0, None), Some((1, How::LeastLoaded)));
    }
}
