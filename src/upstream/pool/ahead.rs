//! Connections opened ahead of requests, in proportion to demand.
//!
//! A burst of clients that finds connections ready does not pay for
//! opening them (on loopback, each handshake runs inside the burst). But
//! every connection kept open costs the upstream too: a server with a
//! thread or a descriptor per connection (Python and C++ servers, proxies
//! with connection limits, an auth sidecar) holds one for each, and one
//! whose event loop uses `select()` breaks past descriptor 1,024. So a
//! pool opens a few at start ([`Ahead::floor`]), and after each sweep tops
//! itself up to what requests recently had in use at once, never beyond
//! [`Ahead::cap`]. Connections beyond demand are left to expire (the idle
//! timeout); none is ever closed to meet the target.

use std::sync::atomic::Ordering;

use super::state::Pool;

/// One pool's share of the connections kept open ahead to its upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ahead {
    /// Opened at start, and kept open while requests ask for fewer.
    pub floor: usize,
    /// The most opened ahead, whatever the demand.
    pub cap: usize,
}

impl Ahead {
    /// Worker `worker`'s share (of `workers`) of `floor` and `cap`
    /// connections to one upstream, split as evenly as the counts allow:
    /// the workers' shares add up to the whole (some get none when there
    /// are more workers than connections).
    pub(crate) fn share(floor: usize, cap: usize, worker: usize, workers: usize) -> Self {
        let workers = workers.max(1);
        let part = |total: usize| total / workers + usize::from(worker < total % workers);
        Self {
            floor: part(floor.min(cap)),
            cap: part(cap),
        }
    }
}

impl Pool {
    /// Open up to `n` connections and keep them idle, a batch at a time;
    /// stops at the first failure (the upstream may not be up yet: requests
    /// connect then as usual) and never holds more than the pool keeps
    /// idle. Returns how many were opened.
    pub(in crate::upstream) async fn warm(&self, n: usize) -> usize {
        const BATCH: usize = 32;
        let held = self.inner.idle.lock().map(|i| i.len()).unwrap_or(0);
        let n = n.min(self.inner.max_idle.saturating_sub(held));
        let mut opened = 0;
        while opened < n {
            let batch = (n - opened).min(BATCH);
            let leases = futures_util::future::join_all((0..batch).map(|_| self.open())).await;
            let mut failed = false;
            for lease in leases {
                match lease {
                    Ok(lease) => {
                        self.put_back(lease);
                        opened += 1;
                    }
                    Err(_) => failed = true,
                }
            }
            if failed {
                break;
            }
            // Requests that arrive meanwhile go first.
            tokio::task::yield_now().await;
        }
        opened
    }

    /// Open connections until the pool holds as many as requests had in
    /// use at once since the last top-up, at least `ahead.floor` and at
    /// most `ahead.cap` (held ones count: in use and idle). Returns how
    /// many were opened.
    pub(in crate::upstream) async fn top_up(&self, ahead: Ahead) -> usize {
        let in_use = self.inner.in_use.load(Ordering::Relaxed);
        // The next period's peak starts from what is in use now.
        let peak = self.inner.peak.swap(in_use, Ordering::Relaxed);
        let target = ahead.floor.max(peak).min(ahead.cap);
        let idle = self.inner.idle.lock().map(|i| i.len()).unwrap_or(0);
        match target.checked_sub(in_use + idle) {
            Some(missing) if missing > 0 => self.warm(missing).await,
            _ => 0,
        }
    }

    /// Connections in use by requests now.
    #[cfg(test)]
    pub(in crate::upstream) fn in_use(&self) -> usize {
        self.inner.in_use.load(Ordering::Relaxed)
    }
}
