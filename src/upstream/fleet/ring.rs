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

use crate::wire::affinity::mix;

/// One candidate upstream, as the ring sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seat {
    /// Its place in the configured list.
    pub index: usize,
    /// Its name's stable hash.
    pub id: u64,
    pub weight: u32,
    pub in_flight: u64,
}

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
pub(crate) fn order(key: u64, pool: &[Seat]) -> Vec<Seat> {
    let mut ranked: Vec<(f64, Seat)> = pool
        .iter()
        .map(|s| (score(key, s.id, s.weight), *s))
        .collect();
    ranked.sort_by(|(a, s), (b, t)| b.total_cmp(a).then(s.index.cmp(&t.index)));
    ranked.into_iter().map(|(_, s)| s).collect()
}

/// The upstream `key` goes to among `pool` (see the module doc), and
/// whether it is the key's home; `None` for an empty pool.
pub(crate) fn choose(key: u64, spill: f64, pool: &[Seat]) -> Option<(usize, How)> {
    let total: u64 = pool.iter().map(|s| s.in_flight).sum();
    let weights: u64 = pool.iter().map(|s| u64::from(s.weight.max(1))).sum();
    let room = (1.0 + spill.max(0.0)) * (total as f64 + 1.0) / weights.max(1) as f64;
    let ranked = order(key, pool);
    let within = |s: &Seat| (s.in_flight + 1) as f64 <= (room * f64::from(s.weight.max(1))).ceil();
    let at = ranked.iter().position(within).unwrap_or(0);
    let how = if at == 0 { How::Affinity } else { How::Spill };
    ranked.get(at).map(|s| (s.index, how))
}

#[cfg(test)]
#[path = "ring_tests.rs"]
mod tests;
