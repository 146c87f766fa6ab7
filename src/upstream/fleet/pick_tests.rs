//! Unit tests of `pick`.

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
    let ranked: Vec<usize> = ring::order(key, &seats(&v.iter().enumerate().collect::<Vec<_>>()))
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
