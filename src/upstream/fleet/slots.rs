//! What a DNS answer changes in a name's slots: a pure function of what
//! each slot holds and the addresses found, so the rules can be tested on
//! their own.
//!
//! - The addresses found, without repeats, in their sorted order; past
//!   the slots there are, the rest are left out (counted).
//! - A member whose address is no longer found drains (no new request;
//!   its slot empties once nothing is in flight).
//! - A draining member whose address is found again takes requests again.
//! - A new address goes to the first empty slot; with none empty (every
//!   slot holds a member, some draining), it waits for the next answer
//!   (counted as left out).

use std::net::SocketAddr;

/// What one slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    Empty,
    Active(SocketAddr),
    Draining(SocketAddr),
}

/// One change to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    Add { slot: usize, addr: SocketAddr },
    Drain { slot: usize },
    Revive { slot: usize },
}

/// The changes an answer makes, and how many addresses found got no slot.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Plan {
    pub changes: Vec<Change>,
    pub left_out: usize,
}

/// The changes that make `slots` hold `found` (see the module doc).
pub(super) fn plan(slots: &[Held], found: &[SocketAddr]) -> Plan {
    let mut wanted: Vec<SocketAddr> = found.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut left_out = wanted.len().saturating_sub(slots.len());
    wanted.truncate(slots.len());
    let mut changes = Vec::new();
    for (slot, held) in slots.iter().enumerate() {
        match *held {
            Held::Active(a) if wanted.binary_search(&a).is_err() => {
                changes.push(Change::Drain { slot });
            }
            Held::Draining(a) if wanted.binary_search(&a).is_ok() => {
                changes.push(Change::Revive { slot });
            }
            _ => {}
        }
    }
    let held = |a: &SocketAddr| {
        slots
            .iter()
            .any(|h| matches!(h, Held::Active(x) | Held::Draining(x) if x == a))
    };
    let mut empty = slots
        .iter()
        .enumerate()
        .filter(|(_, h)| **h == Held::Empty)
        .map(|(i, _)| i);
    for addr in wanted.into_iter().filter(|a| !held(a)) {
        match empty.next() {
            Some(slot) => changes.push(Change::Add { slot, addr }),
            None => left_out += 1,
        }
    }
    Plan { changes, left_out }
}

#[cfg(test)]
mod tests {
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
}
