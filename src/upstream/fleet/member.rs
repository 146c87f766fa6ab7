//! One upstream of the fleet as every worker sees it: its settings, its
//! health, its load (requests in flight), the models it has and has
//! loaded, and its metric handles (registered once, labelled with its
//! name). A member found by DNS also has the generation of its slot's
//! placement and may be draining (no new request; see [`super::dns`]).

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use arc_swap::ArcSwap;
use tokio::sync::Notify;

use crate::config::UpstreamSpec;
use crate::upstream::load::{InFlight, Load};

/// What is known of an upstream's models.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Whether `models` was learned (or listed in the config): until then
    /// the upstream may have any model.
    pub known: bool,
    /// Normalized names of the models it has.
    pub models: HashSet<String>,
    /// Normalized names of the models it has loaded (`/api/ps`).
    pub loaded: HashSet<String>,
    /// When `models` was last read from `/api/tags`.
    pub models_at: Option<SystemTime>,
    /// When `loaded` was last read from `/api/ps`.
    pub loaded_at: Option<SystemTime>,
}

/// Whether an upstream has a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Has {
    No,
    /// Its models are not known yet.
    Maybe,
    Yes,
}

/// How long an upstream whose request timed out before its first byte is
/// ranked after the others, unless it serves a request first.
pub(crate) const STALL_HOLD: Duration = Duration::from_secs(60);

/// The instant stall times are counted from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Milliseconds after [`epoch`], plus one (never 0).
fn now_ms() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
}

/// One upstream, shared by every worker.
pub(crate) struct Member {
    pub spec: UpstreamSpec,
    /// `spec.name`, shared with the requests it serves (their metrics).
    label: Arc<str>,
    /// `spec.name`'s stable hash: its place on the affinity ring.
    id: u64,
    load: Arc<Load>,
    healthy: AtomicBool,
    /// When a request last timed out before its first byte (milliseconds
    /// after [`epoch`], plus one; 0: none since it last served one). Its
    /// probes may still answer: a wedged runner behind a live server.
    stalled_at: AtomicU64,
    stalls: metrics::Counter,
    health_gauge: metrics::Gauge,
    catalog: ArcSwap<Catalog>,
    /// The last `/api/ps` read, in detail (see [`super::loaded`]).
    loaded: ArcSwap<super::ps::Loaded>,
    pub(super) gauges: super::ps::Gauges,
    /// The last failure and when it happened (for `/-/upstreams`); only
    /// written when something failed.
    last_error: Mutex<Option<(String, SystemTime)>>,
    /// Its slot's placement (0: a configured upstream).
    generation: u64,
    /// Found by DNS, and gone from the last answer: takes no new request.
    /// Since when (milliseconds after [`epoch`], plus one; 0: not).
    draining: AtomicU64,
    /// Found by DNS: woken when it fails, for an early lookup.
    early: Option<Arc<Notify>>,
}

impl Member {
    pub(super) fn new(spec: UpstreamSpec) -> Self {
        Self::placed(spec, 0, None)
    }

    /// A member found by DNS, in the slot placement `generation`; `early`
    /// is woken when it fails.
    pub(super) fn placed(spec: UpstreamSpec, generation: u64, early: Option<Arc<Notify>>) -> Self {
        let n = spec.name.clone();
        let catalog = Catalog {
            known: spec.models.is_some(),
            models: spec.models.iter().flatten().cloned().collect(),
            ..Catalog::default()
        };
        let health_gauge = metrics::gauge!("augur_upstream_healthy", "upstream" => n.clone());
        let gauges = super::ps::Gauges::new(&n);
        health_gauge.set(1.0);
        Self {
            load: Arc::new(Load {
                in_flight: AtomicU64::new(0),
                gauge: metrics::gauge!("augur_upstream_in_flight", "upstream" => n.clone()),
                requests: metrics::counter!("augur_upstream_requests_total", "upstream" => n.clone()),
                errors: metrics::counter!("augur_upstream_errors_total", "upstream" => n.clone()),
            }),
            healthy: AtomicBool::new(true),
            stalled_at: AtomicU64::new(0),
            stalls: metrics::counter!("augur_upstream_first_byte_timeouts_total", "upstream" => n),
            health_gauge,
            catalog: ArcSwap::from_pointee(catalog),
            loaded: ArcSwap::from_pointee(super::ps::Loaded::default()),
            gauges,
            last_error: Mutex::new(None),
            generation,
            draining: AtomicU64::new(0),
            early,
            label: Arc::from(spec.name.as_str()),
            id: crate::wire::affinity::stable_hash(spec.name.as_bytes()),
            spec,
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.spec.name
    }

    /// Its slot's placement (0: a configured upstream).
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether it takes no new request (found by DNS, and gone).
    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed) != 0
    }

    /// Gone from the DNS answer (`true`), or back in it.
    pub(super) fn set_draining(&self, draining: bool) {
        let since = if draining { now_ms() } else { 0 };
        self.draining.store(since, Ordering::Relaxed);
    }

    /// How long it has been draining (zero when not).
    pub(super) fn drained_for(&self) -> Duration {
        match self.draining.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            at => epoch()
                .elapsed()
                .saturating_sub(Duration::from_millis(at - 1)),
        }
    }

    /// The name's stable hash.
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    /// The name, shared.
    pub(super) fn label(&self) -> &Arc<str> {
        &self.label
    }

    /// Count a request sent to this upstream until the guard is dropped.
    pub(super) fn start(&self) -> InFlight {
        self.load.in_flight.fetch_add(1, Ordering::Relaxed);
        self.load.gauge.increment(1.0);
        self.load.requests.increment(1);
        InFlight(self.load.clone())
    }

    pub(super) fn in_flight(&self) -> u64 {
        self.load.in_flight.load(Ordering::Relaxed)
    }

    pub(super) fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// It answered: back in the rotation if it had left.
    pub(super) fn answered(&self) {
        // Read first: a write on every request would bounce the line
        // between worker threads.
        if self.healthy.load(Ordering::Relaxed) {
            return;
        }
        if !self.healthy.swap(true, Ordering::Relaxed) {
            self.health_gauge.set(1.0);
            tracing::info!(upstream = self.name(), "upstream healthy again");
        }
    }

    /// It served a request (an answer began): back in the rotation, and
    /// no longer stalled.
    pub(super) fn served(&self) {
        if self.stalled_at.load(Ordering::Relaxed) != 0 {
            self.stalled_at.store(0, Ordering::Relaxed);
            tracing::info!(upstream = self.name(), "upstream serving again");
        }
        self.answered();
    }

    /// A request to it timed out before its first byte: ranked after the
    /// upstreams without one for [`STALL_HOLD`], or until it serves again.
    /// Its health probes are not asked: they may well answer.
    pub(super) fn stalled(&self, error: &str) {
        self.stalls.increment(1);
        self.load.errors.increment(1);
        if self.stalled_at.swap(now_ms(), Ordering::Relaxed) == 0 {
            tracing::warn!(upstream = self.name(), error, "upstream stalled");
        }
        if let Ok(mut last) = self.last_error.lock() {
            *last = Some((error.to_string(), SystemTime::now()));
        }
    }

    /// Whether a request to it timed out before its first byte within the
    /// last [`STALL_HOLD`], and none was served since.
    pub(super) fn is_stalled(&self) -> bool {
        match self.stalled_at.load(Ordering::Relaxed) {
            0 => false,
            at => {
                let since = epoch()
                    .elapsed()
                    .saturating_sub(Duration::from_millis(at - 1));
                since < STALL_HOLD
            }
        }
    }

    /// It could not be reached, reset the connection or answered 502/503:
    /// out of the rotation until it answers again.
    pub(super) fn failed(&self, error: &str) {
        self.load.errors.increment(1);
        if let Some(early) = &self.early {
            early.notify_one();
        }
        if self.healthy.swap(false, Ordering::Relaxed) {
            self.health_gauge.set(0.0);
            tracing::warn!(upstream = self.name(), error, "upstream unhealthy");
        }
        if let Ok(mut last) = self.last_error.lock() {
            *last = Some((error.to_string(), SystemTime::now()));
        }
    }

    pub(super) fn last_error(&self) -> Option<(String, SystemTime)> {
        self.last_error.lock().ok().and_then(|l| l.clone())
    }

    pub(super) fn catalog(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.catalog.load()
    }

    /// Whether it has `model` (normalized).
    pub(super) fn has(&self, model: &str) -> Has {
        let catalog = self.catalog.load();
        if !catalog.known {
            Has::Maybe
        } else if catalog.models.contains(model) {
            Has::Yes
        } else {
            Has::No
        }
    }

    /// Whether it has `model` (normalized) loaded.
    pub(super) fn has_loaded(&self, model: &str) -> bool {
        self.catalog.load().loaded.contains(model)
    }

    /// Its models, as `/api/tags` listed them (a static list wins).
    pub(super) fn set_models(&self, models: HashSet<String>) {
        if self.spec.models.is_some() {
            return;
        }
        let current = self.catalog.load();
        self.catalog.store(Arc::new(Catalog {
            known: true,
            models,
            loaded: current.loaded.clone(),
            models_at: Some(SystemTime::now()),
            loaded_at: current.loaded_at,
        }));
    }

    /// Its loaded models, as `/api/ps` listed them.
    pub(super) fn set_loaded(&self, loaded: HashSet<String>) {
        let current = self.catalog.load();
        self.catalog.store(Arc::new(Catalog {
            known: current.known,
            models: current.models.clone(),
            loaded,
            models_at: current.models_at,
            loaded_at: Some(SystemTime::now()),
        }));
    }
}

impl Member {
    /// The last `/api/ps` read, in detail.
    pub(super) fn loaded_detail(&self) -> arc_swap::Guard<Arc<super::ps::Loaded>> {
        self.loaded.load()
    }

    /// A successful `/api/ps` read.
    pub(super) fn set_loaded_detail(&self, loaded: super::ps::Loaded) {
        self.loaded.store(Arc::new(loaded));
    }

    /// A failed `/api/ps` read: the models of the last good one stay.
    pub(super) fn loaded_failed(&self, error: String) {
        let current = self.loaded.load();
        self.loaded.store(Arc::new(super::ps::Loaded {
            models: current.models.clone(),
            read_at: current.read_at,
            error: Some(error),
        }));
    }
}
