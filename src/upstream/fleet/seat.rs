//! The fleet's places, in the configured order: a configured upstream
//! holds one place for good; a name found by DNS reserves `max_members`
//! slots, each empty or holding a member (taking requests, or draining).
//! Indexes (`tried` bits, a preferred upstream, caches) stay valid as
//! members come and go: a cache keyed by index also keys by the member's
//! generation.

use std::{ops::Deref, sync::Arc};

use arc_swap::ArcSwapOption;

use super::member::Member;
use crate::upstream::pool::{Placed, SlotAddr};

/// One place. A configured upstream is read on every request it may
/// take: kept in place rather than behind one more pointer.
#[allow(clippy::large_enum_variant)]
pub(super) enum Seat {
    Fixed(Member),
    Slot(Slot),
}

/// A place a member found by DNS may hold.
pub(super) struct Slot {
    pub member: ArcSwapOption<Member>,
    /// Where the slot's clients connect (every worker's).
    pub addr: Arc<SlotAddr>,
}

/// A member, borrowed from its place or held.
pub(super) enum MemberRef<'a> {
    Fixed(&'a Member),
    Held(Arc<Member>),
}

impl Deref for MemberRef<'_> {
    type Target = Member;

    fn deref(&self) -> &Member {
        match self {
            MemberRef::Fixed(m) => m,
            MemberRef::Held(m) => m,
        }
    }
}

impl Seat {
    /// Its member, if it has one (draining or not).
    pub(super) fn member(&self) -> Option<MemberRef<'_>> {
        match self {
            Seat::Fixed(m) => Some(MemberRef::Fixed(m)),
            Seat::Slot(s) => s.member.load_full().map(MemberRef::Held),
        }
    }

    /// Its member, when it takes new requests.
    pub(super) fn open(&self) -> Option<MemberRef<'_>> {
        self.member().filter(|m| !m.is_draining())
    }

    pub(super) fn slot(&self) -> Option<&Slot> {
        match self {
            Seat::Fixed(_) => None,
            Seat::Slot(s) => Some(s),
        }
    }
}

impl Slot {
    pub(super) fn new() -> Self {
        Self {
            member: ArcSwapOption::empty(),
            addr: Arc::new(SlotAddr::default()),
        }
    }

    /// Give the slot to `member` at `placed`: the address first, so that a
    /// request that finds the member connects to it.
    pub(super) fn fill(&self, member: Member, placed: Placed) {
        self.addr.store(Some(placed));
        self.member.store(Some(Arc::new(member)));
    }

    /// Empty the slot (its member has drained).
    pub(super) fn clear(&self) {
        self.member.store(None);
        self.addr.store(None);
    }
}
