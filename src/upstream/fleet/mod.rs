//! Several upstreams: which one a request goes to, which ones are
//! healthy, and what each has.
//!
//! ```text
//! target = Model(name) | Any | First                 // from the route (surface)
//! pinned = X-Augur-Upstream: <name>                  // 400 for a name not configured
//! index  = pinned or pick::{for_model, any, first}   // see `pick`
//! attempt on clients[index]                           // this worker's pool for it
//! failed before any byte (refused, reset, 502)      → once more on another that has the model
//! no first byte within first_byte_timeout            → stalled; once more on another (body held)
//! 503 (Ollama's "server busy")                      → each other one that has the model, then 503
//! ```
//!
//! Every worker thread has its own clients (connection pools, each swept
//! and topped up in the background: see `pool/ahead.rs`) and shares the
//! rest: each upstream's health, load, models and metrics ([`member`]).
//! With several upstreams a monitor ([`monitor`]) probes each one and
//! reads its models; with one, nothing is chosen, and a poller of its
//! loaded models ([`loaded`], for the status page and metrics) runs
//! instead: the request path costs a branch and the in-flight count.
//! A `dns+http://` upstream reserves slots (its `max_members`) filled by
//! the addresses its name resolves to ([`dns`], [`seat`]); empty and
//! draining slots are never chosen. docs/upstreams.md lists all that runs
//! in the background.

mod dns;
mod get;
mod listing;
mod loaded;
mod member;
mod monitor;
pub(crate) mod pick;
mod ps;
mod ring;
mod seat;
mod send;
mod slots;
mod status;

use std::sync::Arc;

use http::{HeaderMap, HeaderName};
use tokio::sync::Notify;

use super::{
    client::{Upstream, WARM_FLOOR},
    pool::Ahead,
};
use crate::{config::Config, error::ProxyError};

pub(crate) use listing::Listing;
pub use loaded::LOADED_POLL_EVERY;
use member::Member;
pub(crate) use pick::Affinity;
pub use ps::MAX_VRAM_SERIES;
use seat::{MemberRef, Seat, Slot};

/// Names the upstream a request must go to (its configured name).
pub(crate) static X_AUGUR_UPSTREAM: HeaderName = HeaderName::from_static("x-augur-upstream");

/// Names the conversation a request belongs to: its affinity key in place
/// of its prompt's prefix (see `wire::affinity`).
pub(crate) static X_AUGUR_SESSION: HeaderName = HeaderName::from_static("x-augur-session");

/// Where a request may go.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A request naming a model (normalized). `prefer`: the upstream its
    /// capabilities were looked up on, taken when it is healthy and has
    /// the model. `affinity`: the conversation's key, when the model's
    /// policy routes by affinity (else the least loaded).
    Model {
        name: String,
        prefer: Option<usize>,
        affinity: Option<Affinity>,
    },
    /// Any healthy upstream (`/`, `/api/version`, listings of one).
    Any,
    /// The first healthy upstream in the configured order (management
    /// routes and paths augur does not know).
    First,
}

/// The upstreams, as one worker reaches them.
#[derive(Clone)]
pub struct Fleet {
    /// Each upstream's place, in the configured order (see [`seat`]).
    seats: Arc<[Seat]>,
    clients: Arc<[Upstream]>,
    /// One configured upstream: nothing is ever chosen.
    single: bool,
    /// The names found by DNS, and the resolver that looks them up.
    groups: Arc<[dns::Group]>,
    resolver: Option<hickory_resolver::TokioResolver>,
    /// Woken when a model-changing request ends: models are read again.
    changed: Arc<Notify>,
    /// How often the monitor probes, and reads models.
    intervals: (std::time::Duration, std::time::Duration),
    /// Longest wait for one upstream's part of a merged listing.
    listing_timeout: std::time::Duration,
    /// Connections opened ahead to each upstream, all workers together:
    /// at start and at least (floor), at most (cap).
    ahead: Arc<[Ahead]>,
}

impl Fleet {
    /// The configured upstreams, with clients for the current thread.
    pub fn new(config: &Config) -> Result<Self, ProxyError> {
        let mut seats = Vec::new();
        let mut groups = Vec::new();
        for spec in &config.upstreams {
            match &spec.dns {
                None => seats.push(Seat::Fixed(Member::new(spec.clone()))),
                Some(d) => {
                    groups.push(dns::Group {
                        spec: spec.clone(),
                        dns: d.clone(),
                        first: seats.len(),
                        early: Arc::new(Notify::new()),
                    });
                    seats.extend((0..d.max_members).map(|_| Seat::Slot(Slot::new())));
                }
            }
        }
        let resolver = match groups.is_empty() {
            true => None,
            false => Some(dns::resolver(config.dns_server).map_err(ProxyError::Internal)?),
        };
        Ok(Self {
            clients: clients(config, &seats)?,
            single: seats.len() == 1 && groups.is_empty(),
            seats: seats.into(),
            groups: groups.into(),
            resolver,
            changed: Arc::new(Notify::new()),
            intervals: (config.health_interval, config.models_refresh),
            listing_timeout: config.listing_timeout,
            ahead: ahead(config),
        })
    }

    /// The same upstreams with new clients, for a worker thread that runs
    /// its own event loop.
    pub fn for_worker(&self, config: &Config) -> Result<Self, ProxyError> {
        Ok(Self {
            clients: clients(config, &self.seats)?,
            ..self.clone()
        })
    }

    /// How many upstreams there are (at least one): a name found by DNS
    /// counts its slots.
    pub fn len(&self) -> usize {
        self.seats.len()
    }

    /// Never: there is at least one upstream.
    pub fn is_empty(&self) -> bool {
        self.seats.is_empty()
    }

    /// Whether requests need a choice at all.
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// Upstream `i`'s name (`None` for an empty slot).
    pub fn name(&self, i: usize) -> Option<String> {
        self.member(i).map(|m| m.name().to_string())
    }

    /// Upstream `i`, when it has a member (draining or not).
    fn member(&self, i: usize) -> Option<MemberRef<'_>> {
        self.seats.get(i)?.member()
    }

    /// The placement of upstream `i`'s member (0: a configured upstream):
    /// what is cached by index is cached for one placement.
    pub(crate) fn generation(&self, i: usize) -> u64 {
        match self.seats.get(i) {
            Some(Seat::Slot(_)) => self.member(i).map_or(0, |m| m.generation()),
            _ => 0,
        }
    }

    /// The members that take new requests, with this thread's clients.
    fn open(&self) -> impl Iterator<Item = (MemberRef<'_>, &Upstream)> {
        self.seats
            .iter()
            .zip(self.clients.iter())
            .filter_map(|(seat, client)| seat.open().map(|m| (m, client)))
    }

    /// Upstream `i`'s client on this thread.
    pub(crate) fn client(&self, i: usize) -> Option<&Upstream> {
        self.clients.get(i)
    }

    /// Drop idle connections every few seconds, for every upstream, for as
    /// long as the current runtime runs; none is opened ahead (the pools
    /// of augur's own probes and listings).
    pub fn spawn_sweepers(&self) {
        for client in self.clients.iter() {
            client.spawn_sweeper(Ahead::default());
        }
    }

    /// For worker `worker` of `workers`: open its share of connections
    /// ahead to each upstream now (all at once), so that the first clients
    /// find them ready, and keep its pools swept and topped up in
    /// proportion to demand (see [`Ahead`]) for as long as the current
    /// runtime runs. Returns once the first ones are open.
    pub async fn keep_ahead(&self, worker: usize, workers: usize) {
        let warming = self.clients.iter().zip(self.ahead.iter()).enumerate().map(
            |(i, (client, total))| async move {
                let share = Ahead::share(total.floor, total.cap, worker, workers);
                client.spawn_sweeper(share);
                let opened = client.warm(share).await;
                let upstream = self.name(i).unwrap_or_default();
                tracing::debug!(upstream, opened, "upstream connections opened ahead");
            },
        );
        futures_util::future::join_all(warming).await;
    }

    /// A model changed on some upstream (pulled, created, copied, deleted
    /// through augur): read every upstream's models again soon.
    pub fn models_changed(&self) {
        if !self.is_single() {
            self.changed.notify_one();
        }
    }

    /// The upstream a request with `headers` for `target` goes to first:
    /// the one `X-Augur-Upstream` names, else the best for the target.
    pub fn choose(&self, headers: &HeaderMap, target: &Target) -> Result<usize, ProxyError> {
        if let Some(i) = self.pinned(headers)? {
            self.count(target, "pinned");
            return Ok(i);
        }
        Ok(self.pick(target, 0).unwrap_or(0))
    }

    /// The index `X-Augur-Upstream` names; a name not configured is 400.
    fn pinned(&self, headers: &HeaderMap) -> Result<Option<usize>, ProxyError> {
        let Some(value) = headers.get(&X_AUGUR_UPSTREAM) else {
            return Ok(None);
        };
        let name = value.to_str().unwrap_or_default().trim();
        self.seats
            .iter()
            .position(|s| s.open().is_some_and(|m| m.name() == name))
            .map(Some)
            .ok_or_else(|| {
                let shown: String = String::from_utf8_lossy(value.as_bytes())
                    .chars()
                    .take(64)
                    .collect();
                ProxyError::BadRequest(format!("X-Augur-Upstream: no upstream is named {shown:?}"))
            })
    }

    /// The best untried upstream for `target` (see [`pick`]). A model
    /// nobody has goes to the first healthy upstream, which answers with
    /// Ollama's own "not found".
    fn pick(&self, target: &Target, tried: u64) -> Option<usize> {
        if self.is_single() {
            return (tried == 0).then_some(0);
        }
        match target {
            Target::Model {
                name,
                prefer,
                affinity,
            } => {
                if let Some(p) = *prefer
                    && tried & pick::bit(p) == 0
                    && let Some(m) = self.seats.get(p).and_then(Seat::open)
                    && m.healthy()
                    && !m.is_stalled()
                    && m.has(name) != member::Has::No
                {
                    return Some(p);
                }
                let (views, closed) = self.views(Some(name));
                match pick::for_model_by(&views, tried | closed, *affinity) {
                    Some((i, how)) => {
                        if tried == 0 {
                            self.count(target, how.label());
                        }
                        Some(i)
                    }
                    None => (tried == 0).then(|| pick::first(&views, closed)).flatten(),
                }
            }
            Target::Any => {
                let (views, closed) = self.views(None);
                pick::any(&views, tried | closed)
            }
            Target::First => {
                let (views, closed) = self.views(None);
                pick::first(&views, tried | closed)
            }
        }
    }

    /// Count a choice of upstream for a model some upstream has (the
    /// label's values stay within the fleet's models).
    fn count(&self, target: &Target, how: &'static str) {
        let Target::Model { name, .. } = target else {
            return;
        };
        if self.is_single() || !self.open().any(|(m, _)| m.has(name) == member::Has::Yes) {
            return;
        }
        metrics::counter!("augur_routing_decisions_total", "model" => name.clone(), "how" => how)
            .increment(1);
    }

    /// What the choice needs to know of each upstream now, and the
    /// upstreams closed to new requests (empty or draining slots: bits as
    /// in `tried`).
    fn views(&self, model: Option<&str>) -> (Vec<pick::View>, u64) {
        let view = |m: &Member| pick::View {
            healthy: m.healthy(),
            stalled: m.is_stalled(),
            has: model.map_or(member::Has::Yes, |name| m.has(name)),
            loaded: model.is_some_and(|name| m.has_loaded(name)),
            in_flight: m.in_flight(),
            weight: m.spec.weight,
            id: m.id(),
        };
        let mut closed = 0u64;
        let views = self
            .seats
            .iter()
            .enumerate()
            .map(|(i, seat)| match seat {
                Seat::Fixed(m) => view(m),
                Seat::Slot(_) => match seat.open() {
                    Some(m) => view(&m),
                    None => {
                        closed |= pick::bit(i);
                        pick::View::CLOSED
                    }
                },
            })
            .collect();
        (views, closed)
    }
}

/// Each upstream's connections opened ahead, all workers together: its
/// `warm_connections` (the `[upstream]` table's unless it sets its own),
/// never more than `max_connections`; [`WARM_FLOOR`] of them at start.
/// A member found by DNS opens none at start (it has no address yet).
fn ahead(config: &Config) -> Arc<[Ahead]> {
    config
        .upstreams
        .iter()
        .flat_map(|spec| {
            let cap = spec
                .warm_connections
                .unwrap_or(config.warm_connections)
                .min(config.max_connections);
            let floor = match spec.dns {
                None => WARM_FLOOR.min(cap),
                Some(_) => 0,
            };
            std::iter::repeat_n(Ahead { floor, cap }, spec.slots())
        })
        .collect()
}

/// One client per place (see [`seat`]), each with its own timeouts (the
/// `[upstream]` table's unless it sets its own); a slot's connects to the
/// address its member has.
fn clients(config: &Config, seats: &[Seat]) -> Result<Arc<[Upstream]>, ProxyError> {
    let specs = config
        .upstreams
        .iter()
        .flat_map(|spec| std::iter::repeat_n(spec, spec.slots()));
    let clients = specs
        .zip(seats)
        .map(|(spec, seat)| {
            let client = Upstream::new(
                spec.url.clone(),
                spec.connect_timeout.unwrap_or(config.connect_timeout),
                spec.first_byte_timeout.unwrap_or(config.first_byte_timeout),
                spec.idle_timeout.unwrap_or(config.idle_timeout),
            )?
            .named(&spec.name);
            Ok(match seat.slot() {
                Some(slot) => client.dialing(slot.addr.clone()),
                None => client,
            })
        })
        .collect::<Result<Vec<_>, ProxyError>>()?;
    if clients.is_empty() {
        return Err(ProxyError::Internal("no upstream is configured".into()));
    }
    Ok(clients.into())
}

#[cfg(test)]
mod tests;
