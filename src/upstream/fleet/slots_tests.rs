//! Unit tests of `slots`.

use super::*;

fn a(last: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], 11434))
}

#[test]
fn a_first_answer_fills_the_first_slots_in_address_order() {
    let p = plan(&[Held::Empty; 3], &[a(9), a(2), a(9)]);
    assert_eq!(
        p.changes,
        [
            Change::Add {
                slot: 0,
                addr: a(2)
            },
            Change::Add {
                slot: 1,
                addr: a(9)
            },
        ]
    );
    assert_eq!(p.left_out, 0);
}

#[test]
fn an_unchanged_answer_changes_nothing() {
    let slots = [Held::Active(a(2)), Held::Empty, Held::Active(a(1))];
    assert_eq!(plan(&slots, &[a(1), a(2)]), Plan::default());
}

#[test]
fn a_gone_address_drains_and_a_new_one_takes_an_empty_slot() {
    let slots = [Held::Active(a(1)), Held::Active(a(2)), Held::Empty];
    let p = plan(&slots, &[a(2), a(3)]);
    assert_eq!(
        p.changes,
        [
            Change::Drain { slot: 0 },
            Change::Add {
                slot: 2,
                addr: a(3)
            }
        ]
    );
}

#[test]
fn a_draining_member_found_again_is_revived_not_added_twice() {
    let slots = [Held::Draining(a(1)), Held::Empty];
    let p = plan(&slots, &[a(1)]);
    assert_eq!(p.changes, [Change::Revive { slot: 0 }]);
    // Still gone: nothing to do while it drains.
    assert_eq!(plan(&slots, &[]), Plan::default());
}

#[test]
fn addresses_past_the_bound_or_without_a_free_slot_are_left_out() {
    let p = plan(&[Held::Empty; 2], &[a(3), a(1), a(2)]);
    assert_eq!(p.changes.len(), 2);
    assert_eq!(p.left_out, 1);
    // Both slots busy, one draining: the new address waits.
    let busy = [Held::Draining(a(1)), Held::Active(a(2))];
    let p = plan(&busy, &[a(2), a(3)]);
    assert_eq!(
        p,
        Plan {
            changes: vec![],
            left_out: 1
        }
    );
}

#[test]
fn an_empty_answer_drains_every_member() {
    // The resolver keeps the last set on an empty answer or a failure
    // (see `dns.rs`); the plan itself is literal.
    let slots = [Held::Active(a(1)), Held::Active(a(2))];
    let p = plan(&slots, &[]);
    assert_eq!(
        p.changes,
        [Change::Drain { slot: 0 }, Change::Drain { slot: 1 }]
    );
}
