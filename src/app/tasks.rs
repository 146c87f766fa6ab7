//! The process's background tasks (policy and certificate reloads, the
//! upstream monitor, DNS lookups, loaded-model polls, metric upkeep, limit
//! housekeeping, the admin listener), in one set, ended one way: each is
//! handed the shutdown signal and ends by itself when it turns; the set
//! is then awaited whole, and what has not ended within a bound is
//! aborted.

use std::{future::Future, time::Duration};

use tokio::{sync::watch, task::JoinSet};

/// The background tasks, and the signal that ends them.
pub(super) struct Background {
    set: JoinSet<()>,
    shutdown: watch::Receiver<bool>,
}

impl Background {
    /// An empty set whose tasks end when `shutdown` turns true.
    pub(super) fn new(shutdown: watch::Receiver<bool>) -> Self {
        Self {
            set: JoinSet::new(),
            shutdown,
        }
    }

    /// The signal, for a task to watch.
    pub(super) fn shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    /// Run `task`, which ends by itself when the signal turns.
    pub(super) fn spawn(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.set.spawn(task);
    }

    /// Run `step` every `every` (the first after one interval) until the
    /// signal turns.
    pub(super) fn every(&mut self, every: Duration, mut step: impl FnMut() + Send + 'static) {
        let mut shutdown = self.shutdown();
        self.spawn(async move {
            let start = tokio::time::Instant::now() + every;
            let mut tick = tokio::time::interval_at(start, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => step(),
                    changed = shutdown.changed() => {
                        if changed.is_err() || *shutdown.borrow() {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// Wait until every task has ended, at most `within`; abort the rest.
    pub(super) async fn join(mut self, within: Duration) {
        let all = async {
            while let Some(ended) = self.set.join_next().await {
                if let Err(e) = ended
                    && e.is_panic()
                {
                    tracing::error!(error = %e, "a background task panicked");
                }
            }
        };
        if tokio::time::timeout(within, all).await.is_err() {
            tracing::warn!(
                left = self.set.len(),
                "background tasks still running at exit; stopped"
            );
            self.set.shutdown().await;
        }
    }
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
