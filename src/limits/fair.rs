//! Fair queuing for one model's concurrency slots.
//!
//! Requests that find every slot taken wait in one queue per model, served
//! by start-time fair queuing across principals rather than first come,
//! first served: each waiting request gets a start tag
//! `max(virtual time, the finish tag of its principal's previous request)`
//! and a finish tag `start + 1/weight`; a free slot goes to the waiting
//! request with the smallest start tag (then the earliest), and the
//! virtual time becomes that tag. A principal that queued thirty requests
//! has tags 1, 2, …, 30; another principal arriving then gets the current
//! virtual time, so it is served next, after at most the slot that frees
//! first. Within one principal requests keep their order. A key's `weight`
//! (default 1) divides its tag step: weight 2 is served twice as often.
//!
//! A slot is handed from the request that releases it straight to the
//! next one, so an arriving request cannot take it in between. A waiter
//! whose client left (its future dropped) or whose queue timeout passed
//! leaves the queue at once; a slot sent to a waiter that just left goes on
//! to the next.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use tokio::sync::oneshot;
use tracing::Instrument;

/// Tag step of a weight-1 principal.
const STEP: u64 = 1_000_000;

/// Who is waiting: the fairness key (per key id, or per client IP for
/// anonymous callers) and the metric label (key id or "anonymous").
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiting<'a> {
    pub key: &'a str,
    pub label: &'a str,
    pub weight: u32,
}

struct Waiter {
    principal: String,
    tx: oneshot::Sender<Slot>,
}

struct Flow {
    /// Finish tag of this principal's last queued request.
    finish: u64,
    waiting: usize,
    label: String,
}

struct State {
    in_flight: u32,
    /// By (start tag, arrival number).
    waiting: BTreeMap<(u64, u64), Waiter>,
    /// Principals with waiting requests.
    flows: HashMap<String, Flow>,
    virtual_time: u64,
    arrivals: u64,
}

/// The slots of one (model, `max_in_flight`) and their queue.
pub(crate) struct Gate {
    max: u32,
    /// `model` label of the metrics (the policy glob).
    label: String,
    state: Mutex<State>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("max", &self.max)
            .field("label", &self.label)
            .finish()
    }
}

/// What the status page shows of one gate.
#[derive(Debug, Clone)]
pub(crate) struct GateView {
    pub label: String,
    pub max: u32,
    pub in_flight: u32,
    /// Requests waiting, by principal label.
    pub waiting: Vec<(String, usize)>,
}

/// One held slot; released on drop (to the next waiter, if any).
#[derive(Debug)]
pub(crate) struct Slot {
    gate: Arc<Gate>,
    armed: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if std::mem::take(&mut self.armed) {
            let mut st = self.gate.lock();
            st.in_flight = st.in_flight.saturating_sub(1);
            self.gate.dispatch(&mut st);
        }
    }
}

/// Removes its waiter from the queue when dropped before being served.
struct Queued {
    gate: Arc<Gate>,
    tag: (u64, u64),
}

impl Drop for Queued {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        if let Some(w) = st.waiting.remove(&self.tag) {
            self.gate.left_queue(&mut st, &w.principal);
        }
    }
}

impl Gate {
    pub(crate) fn new(max: u32, label: &str) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            label: label.to_string(),
            state: Mutex::new(State {
                in_flight: 0,
                waiting: BTreeMap::new(),
                flows: HashMap::new(),
                virtual_time: 0,
                arrivals: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Its slots and who waits for them (at most `max_rows` principals,
    /// the longest queues first).
    pub(crate) fn view(&self, max_rows: usize) -> GateView {
        let st = self.lock();
        let mut waiting: Vec<(String, usize)> = st
            .flows
            .values()
            .map(|f| (f.label.clone(), f.waiting))
            .collect();
        waiting.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        waiting.truncate(max_rows);
        GateView {
            label: self.label.clone(),
            max: self.max,
            in_flight: st.in_flight,
            waiting,
        }
    }

    /// Whether nothing holds or waits for a slot.
    pub(crate) fn idle(&self) -> bool {
        let st = self.lock();
        st.in_flight == 0 && st.waiting.is_empty()
    }

    /// A slot now, or after waiting in the fair queue up to `timeout`
    /// (`None` after it, or at once with a zero timeout).
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        who: Waiting<'_>,
        timeout: Duration,
    ) -> Option<Slot> {
        let (rx, queued) = {
            let mut st = self.lock();
            if st.in_flight < self.max && st.waiting.is_empty() {
                st.in_flight += 1;
                queue_wait(who.label, Duration::ZERO);
                return Some(Slot {
                    gate: self.clone(),
                    armed: true,
                });
            }
            if timeout.is_zero() {
                return None;
            }
            metrics::counter!("augur_concurrency_queued_total", "model" => self.label.clone())
                .increment(1);
            let virtual_time = st.virtual_time;
            let flow = st.flows.entry(who.key.to_string()).or_insert(Flow {
                finish: 0,
                waiting: 0,
                label: who.label.to_string(),
            });
            let start = flow.finish.max(virtual_time);
            flow.finish = start + STEP / u64::from(who.weight.clamp(1, 1000));
            flow.waiting += 1;
            st.arrivals += 1;
            let tag = (start, st.arrivals);
            let (tx, rx) = oneshot::channel();
            st.waiting.insert(
                tag,
                Waiter {
                    principal: who.key.to_string(),
                    tx,
                },
            );
            self.depth(who.label).increment(1);
            // Only a slot freed in between makes this do anything.
            self.dispatch(&mut st);
            let queued = Queued {
                gate: self.clone(),
                tag,
            };
            (rx, queued)
        };
        let waited = Instant::now();
        let slot = tokio::time::timeout(timeout, rx)
            .instrument(crate::telemetry::spans::queue_wait(&self.label))
            .await
            .ok()?
            .ok();
        drop(queued);
        if slot.is_some() {
            queue_wait(who.label, waited.elapsed());
        }
        slot
    }

    fn depth(&self, principal: &str) -> metrics::Gauge {
        metrics::gauge!("augur_concurrency_queue_depth",
            "model" => self.label.clone(), "principal" => principal.to_string())
    }

    /// Hand free slots to waiters, smallest start tag first.
    fn dispatch(self: &Arc<Self>, st: &mut State) {
        while st.in_flight < self.max {
            let Some((tag, waiter)) = st.waiting.pop_first() else {
                return;
            };
            st.virtual_time = st.virtual_time.max(tag.0);
            self.left_queue(st, &waiter.principal);
            st.in_flight += 1;
            let slot = Slot {
                gate: self.clone(),
                armed: true,
            };
            if let Err(mut slot) = waiter.tx.send(slot) {
                // The waiter left: the slot goes on to the next one.
                slot.armed = false;
                st.in_flight -= 1;
            }
        }
    }

    fn left_queue(&self, st: &mut State, principal: &str) {
        if let Some(flow) = st.flows.get_mut(principal) {
            flow.waiting -= 1;
            self.depth(&flow.label).decrement(1);
            if flow.waiting == 0 {
                st.flows.remove(principal);
            }
        }
    }
}

/// `augur_queue_wait_seconds`: how long a request waited for its slot
/// (zero when one was free), by principal.
fn queue_wait(principal: &str, waited: Duration) {
    metrics::histogram!("augur_queue_wait_seconds", "principal" => principal.to_string())
        .record(waited.as_secs_f64());
}

#[cfg(test)]
mod tests;
