//! Where a pool connects: a fixed `host:port` (a configured upstream), or
//! the address currently placed in a slot (a member found by DNS), which
//! changes when the slot is given to another member. Each placement has a
//! generation: connections opened to an earlier one are not used again.

use std::{net::SocketAddr, sync::Arc};

use arc_swap::ArcSwapOption;

/// An address placed in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placed {
    pub addr: SocketAddr,
    /// Distinct for every placement (never 0).
    pub generation: u64,
}

/// A slot's current address, shared by every worker's pool for it.
#[derive(Debug, Default)]
pub(crate) struct SlotAddr(ArcSwapOption<Placed>);

impl SlotAddr {
    /// The address now, if the slot holds a member.
    pub(crate) fn load(&self) -> Option<Placed> {
        self.0.load().as_deref().copied()
    }

    /// Place `placed` (or empty the slot).
    pub(crate) fn store(&self, placed: Option<Placed>) {
        self.0.store(placed.map(Arc::new));
    }
}

/// Where a pool connects.
pub(super) enum Dial {
    Fixed(String),
    Slot(Arc<SlotAddr>),
}

impl Dial {
    /// Whether a connection opened at `generation` still goes where new
    /// ones would.
    pub(super) fn current(&self, generation: u64) -> bool {
        match self {
            Dial::Fixed(_) => true,
            Dial::Slot(slot) => slot.load().is_some_and(|p| p.generation == generation),
        }
    }

    /// For the log.
    pub(super) fn describe(&self) -> String {
        match self {
            Dial::Fixed(addr) => addr.clone(),
            Dial::Slot(slot) => slot
                .load()
                .map_or_else(|| "(no address)".to_string(), |p| p.addr.to_string()),
        }
    }
}

/// The error of a slot that holds no address.
pub(super) fn no_address() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotConnected,
        "the member has left (no address)",
    )
}
