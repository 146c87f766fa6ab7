//! Upstreams found by DNS (`dns+http://NAME:PORT`, `dns+srv+http://NAME`):
//! the name is looked up every `resolve_interval`, and soon after one of
//! its members fails (at most once per [`EARLY_GAP`]); each address found
//! is a member upstream named `NAME/ADDRESS`, in one of the slots the
//! name reserved (see [`super::seat`], [`super::slots`]).
//!
//! ```text
//! lookup (A+AAAA, or SRV then each target's A+AAAA), at most LOOKUP_TIMEOUT
//!   failed, timed out or no address → the members stay as they are
//!   addresses                         → new ones added, gone ones draining
//! draining member: no new request; once nothing has been in flight for
//!   DRAIN_GRACE, its slot empties (streams to it finish first)
//! ```
//!
//! A name with no address at start is a waiting state: augur serves, the
//! name has no member (requests that only it could take get 502 "no
//! upstream could take the request", `/-/ready` says not ready when no
//! upstream has a member) until a lookup finds one.

use std::{
    net::SocketAddr,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use hickory_resolver::{TokioResolver, proto::rr::RData};
use tokio::{sync::watch, time::Instant};

use super::{
    group::Group,
    member::Member,
    seat::Seat,
    slots::{self, Change, Held},
    state::Fleet,
};
use crate::{
    config::{DnsSpec, UpstreamSpec},
    upstream::pool::Placed,
};

/// Longest wait for one lookup (SRV and its targets together).
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Shortest time between two lookups of one name when members fail.
const EARLY_GAP: Duration = Duration::from_secs(2);
/// How often draining members are looked at.
const DRAIN_CHECK: Duration = Duration::from_millis(250);
/// How long a draining member stays with nothing in flight before its
/// slot empties (a request that chose it just before it drained has
/// started by then).
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// Most addresses (or SRV targets) read from one answer.
const MAX_FOUND: usize = 256;

/// Every slot placement's generation: distinct, never 0.
static GENERATION: AtomicU64 = AtomicU64::new(1);

impl Fleet {
    /// Look every name up once, now (at start: members before the first
    /// request).
    pub async fn resolve_now(&self) {
        let Some(resolver) = self.resolver.clone() else {
            return;
        };
        let lookups = (0..self.groups.len()).map(|g| {
            let resolver = resolver.clone();
            async move { self.resolve(g, &resolver).await }
        });
        futures_util::future::join_all(lookups).await;
    }

    /// The tasks keeping every name's members current until `shutdown`
    /// (one per name; none without names).
    pub fn resolving(
        &self,
        shutdown: watch::Receiver<bool>,
    ) -> Vec<impl std::future::Future<Output = ()> + Send + 'static> {
        let Some(resolver) = self.resolver.clone() else {
            return Vec::new();
        };
        (0..self.groups.len())
            .map(|g| {
                let (fleet, resolver, shutdown) =
                    (self.clone(), resolver.clone(), shutdown.clone());
                async move { fleet.keep_resolving(g, resolver, shutdown).await }
            })
            .collect()
    }

    async fn keep_resolving(
        &self,
        g: usize,
        resolver: TokioResolver,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let Some(group) = self.groups.get(g) else {
            return;
        };
        let mut last = Instant::now();
        let mut early = false;
        loop {
            let since = last.elapsed();
            let mut wait = group.dns.interval.saturating_sub(since);
            if early {
                wait = wait.min(EARLY_GAP.saturating_sub(since));
            }
            if self.any_draining(group) {
                wait = wait.min(DRAIN_CHECK);
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = group.early.notified() => early = true,
                _ = shutdown.changed() => return,
            }
            self.reap(group);
            let since = last.elapsed();
            if since >= group.dns.interval || (early && since >= EARLY_GAP) {
                tokio::select! {
                    () = self.resolve(g, &resolver) => {}
                    _ = shutdown.changed() => return,
                }
                last = Instant::now();
                early = false;
            }
        }
    }

    /// One lookup of group `g`, and its members changed to match.
    async fn resolve(&self, g: usize, resolver: &TokioResolver) {
        let Some(group) = self.groups.get(g) else {
            return;
        };
        let name = group.spec.name.as_str();
        let found = tokio::time::timeout(LOOKUP_TIMEOUT, lookup(resolver, &group.dns)).await;
        let result = match found {
            Err(_) => Err(("timeout", format!("no answer within {LOOKUP_TIMEOUT:?}"))),
            Ok(Err(e)) => Err(("error", e)),
            Ok(Ok(addrs)) if addrs.is_empty() => Err(("empty", "no address".to_string())),
            Ok(Ok(addrs)) => Ok(addrs),
        };
        let label = match &result {
            Ok(_) => "ok",
            Err((label, _)) => label,
        };
        metrics::counter!("augur_upstream_dns_resolutions_total", "upstream" => name.to_string(), "result" => label)
            .increment(1);
        match result {
            Ok(addrs) => self.apply(group, &addrs),
            Err((_, error)) => {
                tracing::warn!(upstream = name, host = %group.dns.host, error, "DNS lookup failed; members kept");
            }
        }
    }

    /// Change `group`'s slots to hold `found`.
    fn apply(&self, group: &Group, found: &[SocketAddr]) {
        let seats = self.group_seats(group);
        let held: Vec<Held> = seats.iter().map(held).collect();
        let plan = slots::plan(&held, found);
        let name = group.spec.name.as_str();
        let mut added = false;
        for change in &plan.changes {
            match *change {
                Change::Add { slot, addr } => {
                    let Some(s) = seats.get(slot).and_then(|s| s.slot()) else {
                        continue;
                    };
                    let generation = GENERATION.fetch_add(1, Ordering::Relaxed);
                    let spec = member_spec(&group.spec, addr);
                    tracing::info!(upstream = name, member = %spec.name, "upstream member added");
                    let member = Member::placed(spec, generation, Some(group.early.clone()));
                    s.fill(member, Placed { addr, generation });
                    added = true;
                }
                Change::Drain { slot } | Change::Revive { slot } => {
                    let Some(m) = seats.get(slot).and_then(|s| s.member()) else {
                        continue;
                    };
                    let drain = matches!(change, Change::Drain { .. });
                    m.set_draining(drain);
                    let what = if drain { "draining" } else { "found again" };
                    tracing::info!(upstream = name, member = m.name(), "upstream member {what}");
                }
            }
        }
        if plan.left_out > 0 {
            tracing::warn!(
                upstream = name,
                left_out = plan.left_out,
                max_members = group.dns.max_members,
                "more addresses than free member slots; the rest are left out"
            );
        }
        let members = self
            .group_seats(group)
            .iter()
            .filter(|s| s.open().is_some())
            .count();
        metrics::gauge!("augur_upstream_dns_members", "upstream" => name.to_string())
            .set(members as f64);
        if added {
            // New members' models are read now, not at the next refresh.
            self.changed.notify_one();
        }
    }

    /// Empty the slots of `group`'s members that have drained.
    fn reap(&self, group: &Group) {
        for seat in self.group_seats(group) {
            let Some(slot) = seat.slot() else { continue };
            let Some(m) = seat.member() else { continue };
            if m.is_draining() && m.in_flight() == 0 && m.drained_for() >= DRAIN_GRACE {
                tracing::info!(
                    upstream = group.spec.name,
                    member = m.name(),
                    "upstream member removed"
                );
                slot.clear();
            }
        }
    }

    fn any_draining(&self, group: &Group) -> bool {
        self.group_seats(group)
            .iter()
            .any(|s| s.member().is_some_and(|m| m.is_draining()))
    }

    fn group_seats(&self, group: &Group) -> &[Seat] {
        let end = (group.first + group.dns.max_members).min(self.seats.len());
        self.seats.get(group.first..end).unwrap_or_default()
    }
}

/// What a slot holds, as [`slots::plan`] sees it.
fn held(seat: &Seat) -> Held {
    let (Some(slot), Some(m)) = (seat.slot(), seat.member()) else {
        return Held::Empty;
    };
    match slot.addr.load() {
        None => Held::Empty,
        Some(p) if m.is_draining() => Held::Draining(p.addr),
        Some(p) => Held::Active(p.addr),
    }
}

/// A member's settings: the name's, named `NAME/ADDRESS`, at `addr`.
fn member_spec(spec: &UpstreamSpec, addr: SocketAddr) -> UpstreamSpec {
    let path = spec.url.path().trim_end_matches('/');
    UpstreamSpec {
        name: format!("{}/{addr}", spec.name),
        url: format!("http://{addr}{path}")
            .parse()
            .unwrap_or_else(|_| spec.url.clone()),
        dns: None,
        ..spec.clone()
    }
}

/// The addresses `dns` names now.
async fn lookup(resolver: &TokioResolver, dns: &DnsSpec) -> Result<Vec<SocketAddr>, String> {
    // Each lookup asks the server: the interval is the user's choice.
    resolver.clear_cache();
    if !dns.srv {
        return addresses(resolver, &dns.host, dns.port).await;
    }
    let answer = resolver
        .srv_lookup(dns.host.as_str())
        .await
        .map_err(|e| e.to_string())?;
    let mut found = Vec::new();
    for record in answer.answers().iter().take(MAX_FOUND) {
        if let RData::SRV(srv) = &record.data {
            let target = srv.target.to_ascii();
            found.extend(addresses(resolver, &target, srv.port).await?);
        }
        if found.len() >= MAX_FOUND {
            break;
        }
    }
    Ok(found)
}

/// `host`'s A and AAAA addresses, on `port`.
async fn addresses(
    resolver: &TokioResolver,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, String> {
    let ips = resolver.lookup_ip(host).await.map_err(|e| e.to_string())?;
    Ok(ips
        .iter()
        .take(MAX_FOUND)
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
