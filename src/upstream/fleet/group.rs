//! A name found by DNS (`dns+http://`, `dns+srv+http://`): its settings,
//! its slots, and the resolver that looks names up (see `dns` for how
//! their members change).

use std::{net::SocketAddr, sync::Arc, time::Duration};

use hickory_resolver::{
    TokioResolver,
    config::{ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolverConfig},
    net::runtime::TokioRuntimeProvider,
};
use tokio::sync::Notify;

use crate::config::{DnsSpec, UpstreamSpec};

/// A name found by DNS and its slots.
pub(super) struct Group {
    /// As configured (its members take its settings).
    pub spec: UpstreamSpec,
    pub dns: DnsSpec,
    /// Its first slot's index; it has `dns.max_members`.
    pub first: usize,
    /// Woken when one of its members fails.
    pub early: Arc<Notify>,
}

/// The resolver: the system's configuration, or `server` alone.
pub(super) fn resolver(server: Option<SocketAddr>) -> Result<TokioResolver, String> {
    let provider = TokioRuntimeProvider::default();
    let mut builder = match server {
        None => TokioResolver::builder(provider).map_err(|e| format!("DNS configuration: {e}"))?,
        Some(at) => {
            let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
                .into_iter()
                .map(|mut c| {
                    c.port = at.port();
                    c
                })
                .collect();
            let server = NameServerConfig::new(at.ip(), true, connections);
            TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(vec![server]),
                provider,
            )
        }
    };
    let options = builder.options_mut();
    options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    options.timeout = Duration::from_secs(2);
    options.attempts = 2;
    builder.build().map_err(|e| format!("DNS resolver: {e}"))
}
