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
#[path = "slots_tests.rs"]
mod tests;
