//! The fleet as one worker reaches it: every upstream's place and this
//! thread's clients for them, built from the config.

use std::sync::Arc;

use tokio::sync::Notify;

use super::{
    group::{self, Group},
    member::Member,
    seat::{MemberRef, Seat, Slot},
};
use crate::{
    config::Config,
    error::ProxyError,
    upstream::{
        client::{Upstream, WARM_FLOOR},
        pool::Ahead,
    },
};

/// The upstreams, as one worker reaches them.
#[derive(Clone)]
pub struct Fleet {
    /// Each upstream's place, in the configured order (see [`seat`]).
    pub(super) seats: Arc<[Seat]>,
    pub(super) clients: Arc<[Upstream]>,
    /// One configured upstream: nothing is ever chosen.
    pub(super) single: bool,
    /// The names found by DNS, and the resolver that looks them up.
    pub(super) groups: Arc<[Group]>,
    pub(super) resolver: Option<hickory_resolver::TokioResolver>,
    /// Woken when a model-changing request ends: models are read again.
    pub(super) changed: Arc<Notify>,
    /// How often the monitor probes, and reads models.
    pub(super) intervals: (std::time::Duration, std::time::Duration),
    /// Longest wait for one upstream's part of a merged listing.
    pub(super) listing_timeout: std::time::Duration,
    /// Connections opened ahead to each upstream, all workers together:
    /// at start and at least (floor), at most (cap).
    pub(super) ahead: Arc<[Ahead]>,
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
                    groups.push(Group {
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
            false => Some(group::resolver(config.dns_server).map_err(ProxyError::Internal)?),
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
    pub(super) fn member(&self, i: usize) -> Option<MemberRef<'_>> {
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
    pub(super) fn open(&self) -> impl Iterator<Item = (MemberRef<'_>, &Upstream)> {
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
}

/// Each upstream's connections opened ahead, all workers together: its
/// `warm_connections` (the `[upstream]` table's unless it sets its own),
/// never more than `max_connections`; [`WARM_FLOOR`] of them at start.
/// A member found by DNS opens none at start (it has no address yet).
pub(super) fn ahead(config: &Config) -> Arc<[Ahead]> {
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
