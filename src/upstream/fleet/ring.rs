//! Affinity among the upstreams that may take a request: rendezvous
//! (highest random weight) hashing with bounded load.
//!
//! Each candidate scores `weight / -ln(u)`, `u` a uniform draw from
//! `hash(key, upstream name)`; the highest score is the key's home, the
//! next its second choice, and so on. An upstream's name, not its place in
//! the list, decides: adding or removing one moves only the keys it wins or
//! held, and every replica ranks the same way. The key goes to the first
//! upstream in that order whose requests in flight, with this one, stay
//! within its share of the candidates' load:
//!
//! ```text
//! in_flight(i) + 1 <= ceil((1 + spill) × (total in flight + 1) × weight(i) / total weight)
//! ```
//!
//! The shares add up to more than the load, so one always qualifies, and
//! no upstream runs more than `(1 + spill)` times its share (plus one)
//! because of affinity.

use super::pick::View;
use crate::wire::affinity::mix;

/// How the upstream of a request was chosen (a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// The key's home upstream.
    Affinity,
    /// Another upstream, next in the key's order: its home was over the bound.
    Spill,
    /// The least loaded, as without affinity.
    LeastLoaded,
}

impl How {
    pub(crate) fn label(self) -> &'static str {
        match self {
            How::Affinity => "affinity",
            How::Spill => "spill",
            How::LeastLoaded => "least_loaded",
        }
    }
}

/// Key `key`'s score on the upstream with name hash `id` and `weight`.
fn score(key: u64, id: u64, weight: u32) -> f64 {
    // 53 random bits, in (0, 1).
    let u = ((mix(key ^ mix(id)) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    f64::from(weight.max(1)) / -u.ln()
}

/// `pool` in the key's order: its home first.
pub(crate) fn order<'a>(key: u64, pool: &[(usize, &'a View)]) -> Vec<(usize, &'a View)> {
    let mut ranked: Vec<(f64, (usize, &View))> = pool
        .iter()
        .map(|&(i, v)| (score(key, v.id, v.weight), (i, v)))
        .collect();
    ranked.sort_by(|(a, (i, _)), (b, (j, _))| b.total_cmp(a).then(i.cmp(j)));
    ranked.into_iter().map(|(_, c)| c).collect()
}

/// The upstream `key` goes to among `pool` (see the module doc), and
/// whether it is the key's home; `None` for an empty pool.
pub(crate) fn choose(key: u64, spill: f64, pool: &[(usize, &View)]) -> Option<(usize, How)> {
    let total: u64 = pool.iter().map(|(_, v)| v.in_flight).sum();
    let weights: u64 = pool.iter().map(|(_, v)| u64::from(v.weight.max(1))).sum();
    let room = (1.0 + spill.max(0.0)) * (total as f64 + 1.0) / weights.max(1) as f64;
    let ranked = order(key, pool);
    let within = |v: &View| (v.in_flight + 1) as f64 <= (room * f64::from(v.weight.max(1))).ceil();
    let at = ranked.iter().position(|(_, v)| within(v)).unwrap_or(0);
    let how = if at == 0 { How::Affinity } else { How::Spill };
    ranked.get(at).map(|(i, _)| (*i, how))
}

#[cfg(test)]
#[path = "ring_tests.rs"]
mod tests;
