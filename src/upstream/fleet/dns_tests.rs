use futures_util::FutureExt as _;
use http::{HeaderMap, HeaderValue};

use super::*;
use crate::config::Config;
use crate::upstream::fleet::{Target, X_AUGUR_UPSTREAM, pick::bit};

fn addr(last: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], 11434))
}

/// A configured upstream `a`, then the name `gpus` with 3 slots.
fn fleet() -> Fleet {
    let a = UpstreamSpec::from_url("http://127.0.0.1:1").unwrap();
    let mut gpus = UpstreamSpec::from_url("dns+http://ollama.test:11434").unwrap();
    gpus.name = "gpus".into();
    gpus.dns.as_mut().unwrap().max_members = 3;
    let config = Config {
        upstreams: vec![
            UpstreamSpec {
                name: "a".into(),
                ..a
            },
            gpus,
        ],
        dns_server: Some(SocketAddr::from(([127, 0, 0, 1], 53))),
        ..Config::default()
    };
    Fleet::new(&config).unwrap()
}

fn names(f: &Fleet) -> Vec<Option<String>> {
    (0..f.len()).map(|i| f.name(i)).collect()
}

#[test]
fn a_name_reserves_its_slots_and_members_fill_them_in_order() {
    let f = fleet();
    assert_eq!(f.len(), 4);
    assert!(!f.is_single());
    assert_eq!(names(&f), [Some("a".into()), None, None, None]);
    f.apply(&f.groups[0], &[addr(2), addr(1)]);
    assert_eq!(
        names(&f),
        [
            Some("a".into()),
            Some("gpus/10.0.0.1:11434".into()),
            Some("gpus/10.0.0.2:11434".into()),
            None
        ]
    );
    let m = f.member(1).unwrap();
    assert_eq!(m.spec.url.to_string(), "http://10.0.0.1:11434/");
    assert_ne!(f.generation(1), 0);
    assert_ne!(f.generation(1), f.generation(2));
    assert_eq!(f.generation(0), 0);
}

#[test]
fn empty_and_draining_slots_are_never_chosen_nor_named() {
    let f = fleet();
    f.apply(&f.groups[0], &[addr(1), addr(2)]);
    let first = |tried| f.pick(&Target::First, tried);
    assert_eq!(first(0), Some(0));
    assert_eq!(first(bit(0)), Some(1));
    assert_eq!(first(bit(0) | bit(1)), Some(2));
    // The empty slot 3 is never a candidate.
    assert_eq!(first(bit(0) | bit(1) | bit(2)), None);
    assert_eq!(f.pick(&Target::Any, bit(0) | bit(1) | bit(2)), None);

    // 10.0.0.1 is gone: its member drains, and takes no new request.
    f.apply(&f.groups[0], &[addr(2)]);
    assert!(f.member(1).unwrap().is_draining());
    assert_eq!(first(bit(0)), Some(2));
    let model = Target::Model {
        name: "x:latest".into(),
        prefer: Some(1),
        affinity: None,
    };
    assert_eq!(
        f.pick(&model, bit(0)),
        Some(2),
        "a draining member is not preferred"
    );
    let mut headers = HeaderMap::new();
    let draining = HeaderValue::from_static("gpus/10.0.0.1:11434");
    headers.insert(&X_AUGUR_UPSTREAM, draining);
    assert_eq!(
        f.choose(&headers, &Target::Any).unwrap_err().status(),
        http::StatusCode::BAD_REQUEST
    );
    // Found again: back in the rotation, same member.
    let generation = f.generation(1);
    f.apply(&f.groups[0], &[addr(1), addr(2)]);
    assert!(!f.member(1).unwrap().is_draining());
    assert_eq!((first(bit(0)), f.generation(1)), (Some(1), generation));
}

#[test]
fn a_slot_emptied_takes_the_next_address_with_a_new_generation() {
    let f = fleet();
    f.apply(&f.groups[0], &[addr(1), addr(2)]);
    let old = f.generation(1);
    f.apply(&f.groups[0], &[addr(2)]);
    // Drained (what the resolver's loop does once nothing is in flight).
    f.seats[1].slot().unwrap().clear();
    assert_eq!(f.name(1), None);
    assert_eq!(f.seats[1].slot().unwrap().addr.load(), None);
    f.apply(&f.groups[0], &[addr(2), addr(3)]);
    assert_eq!(f.name(1).as_deref(), Some("gpus/10.0.0.3:11434"));
    assert_ne!(
        f.generation(1),
        old,
        "caches keyed by index see a new member"
    );
    let placed = f.seats[1].slot().unwrap().addr.load().unwrap();
    assert_eq!(placed.addr, addr(3));
    assert_eq!(placed.generation, f.generation(1));
}

#[test]
fn a_member_that_fails_asks_for_an_early_lookup() {
    let f = fleet();
    f.apply(&f.groups[0], &[addr(1)]);
    let early = f.groups[0].early.clone();
    assert!(early.notified().now_or_never().is_none());
    f.member(1).unwrap().failed("refused");
    assert!(early.notified().now_or_never().is_some());
    // A configured upstream asks for nothing.
    f.member(0).unwrap().failed("refused");
    assert!(early.notified().now_or_never().is_none());
}
