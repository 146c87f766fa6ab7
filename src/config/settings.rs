//! The resolved startup settings: flag > environment variable > config
//! file > built-in default.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use super::{
    cli::{Cli, DEFAULT_CONFIG_PATH},
    error::ConfigError,
    file::{FileConfig, LogFormat, parse_file, read_file},
    secret::Secret,
    store::{LimitStore, parse_key_prefix, parse_limit_store},
    tls::{self, TlsFiles},
    traces::{self, TraceSettings},
    upstreams::{self, UpstreamSpec},
};

/// The resolved startup settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// Serve a non-loopback address with no API keys (see [`exposure`]).
    pub allow_unauthenticated: bool,
    /// What the admin listener requires as a bearer token, if anything.
    pub admin_token: Option<Secret>,
    /// HTTPS on `listen`; plain HTTP when `None`.
    pub tls: Option<TlsFiles>,
    /// HTTPS on `admin_listen`; plain HTTP when `None`.
    pub admin_tls: Option<TlsFiles>,
    /// Where requests go: at least one (see [`upstreams`]).
    pub upstreams: Vec<UpstreamSpec>,
    pub policies: PathBuf,
    pub schemas: PathBuf,
    /// Largest request body accepted (blob uploads are exempt).
    pub body_limit: u64,
    /// Largest response augur holds in memory when a feature must see it whole.
    pub stream_buffer_limit: u64,
    /// Also the longest wait for a new connection's first byte and for each
    /// piece of a request body.
    /// Memory for compiled schemas and parsed tool sets together.
    pub schema_cache_bytes: u64,
    /// Largest `format` augur sends upstream (the schema after rewriting,
    /// tool envelope included); larger is a 400.
    pub format_limit: u64,
    pub client_header_timeout: Duration,
    pub drain_timeout: Duration,
    /// Most client connections open at once; more wait to be accepted.
    pub max_connections: usize,
    /// Forward `Authorization` / `X-API-Key` upstream even when policies
    /// define API keys (for an upstream behind its own authenticating proxy).
    pub forward_client_auth: bool,
    pub connect_timeout: Duration,
    /// Time allowed for the upstream's response headers (model loads are slow).
    pub first_byte_timeout: Duration,
    /// Longest silence allowed between two chunks of an upstream body.
    pub idle_timeout: Duration,
    /// Most connections opened ahead of requests to each upstream (all
    /// worker threads together; 0: none), unless one sets its own.
    pub warm_connections: usize,
    pub capabilities_ttl: Duration,
    /// With several upstreams: how often each is probed (`/api/version`)
    /// and its loaded models (`/api/ps`) read.
    pub health_interval: Duration,
    /// With several upstreams: how often each one's models (`/api/tags`)
    /// are read again.
    pub models_refresh: Duration,
    /// With several upstreams: longest wait for one upstream's part of a
    /// merged `/api/tags`, `/api/ps` or `/v1/models` (head and body); a
    /// slower one is left out.
    pub listing_timeout: Duration,
    /// The DNS server `dns+` upstreams are looked up at (`IP:port`);
    /// `None`: the system's (`/etc/resolv.conf`).
    pub dns_server: Option<SocketAddr>,
    pub log_format: LogFormat,
    pub log_level: String,
    /// `limits.store`.
    pub limit_store: LimitStore,
    /// Longest wait for one call to the limit store; past it the call
    /// counts as a store error (see the policy's `on_store_error`).
    pub limit_store_timeout: Duration,
    /// Prefix of every key augur writes to the limit store.
    pub limit_key_prefix: String,
    /// OpenTelemetry traces over OTLP; off when `None`.
    pub traces: Option<TraceSettings>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 11435)),
            admin_listen: SocketAddr::from(([127, 0, 0, 1], 11436)),
            allow_unauthenticated: false,
            admin_token: None,
            tls: None,
            admin_tls: None,
            upstreams: vec![UpstreamSpec {
                name: "127.0.0.1:11434".to_string(),
                url: http::Uri::from_static("http://127.0.0.1:11434"),
                weight: 1,
                models: None,
                connect_timeout: None,
                first_byte_timeout: None,
                idle_timeout: None,
                warm_connections: None,
                dns: None,
            }],
            policies: PathBuf::from("./policies"),
            schemas: PathBuf::from("./schemas"),
            body_limit: 64 * 1024 * 1024,
            stream_buffer_limit: 8 * 1024 * 1024,
            schema_cache_bytes: 32 * 1024 * 1024,
            format_limit: 256 * 1024,
            client_header_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            max_connections: 8192,
            forward_client_auth: false,
            connect_timeout: Duration::from_secs(5),
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(600),
            warm_connections: 16,
            capabilities_ttl: Duration::from_secs(300),
            health_interval: Duration::from_secs(5),
            models_refresh: Duration::from_secs(30),
            listing_timeout: Duration::from_secs(10),
            dns_server: None,
            log_format: LogFormat::Text,
            log_level: "info".to_string(),
            limit_store: LimitStore::Memory,
            limit_store_timeout: Duration::from_millis(50),
            limit_key_prefix: "augur".to_string(),
            traces: None,
        }
    }
}

impl Config {
    /// Resolve the settings from the command line, the environment (already
    /// folded into `cli` by clap) and the config file.
    pub fn load(cli: &Cli) -> Result<Self, ConfigError> {
        let file = match &cli.config {
            Some(path) => read_file(path)?,
            None if Path::new(DEFAULT_CONFIG_PATH).exists() => {
                read_file(Path::new(DEFAULT_CONFIG_PATH))?
            }
            None => FileConfig::default(),
        };
        Self::resolve(cli, file)
    }

    /// Resolve from a config file's text (for tests and `--check-config`).
    pub fn from_toml(cli: &Cli, text: &str) -> Result<Self, ConfigError> {
        let file = parse_file(Path::new("<inline>"), text)?;
        Self::resolve(cli, file)
    }

    fn resolve(cli: &Cli, file: FileConfig) -> Result<Self, ConfigError> {
        let d = Config::default();
        let ms =
            |v: Option<u64>, default: Duration| v.map(Duration::from_millis).unwrap_or(default);
        let upstreams = upstreams::resolve(&cli.upstream, file.upstreams, file.upstream.url)?;
        let (tls, admin_tls) = tls::resolve_listeners(&cli.tls, &file.server)?;
        let traces = traces::resolve(file.traces, |k| std::env::var(k).ok())?;
        Ok(Self {
            listen: cli.listen.or(file.server.listen).unwrap_or(d.listen),
            admin_listen: cli
                .admin_listen
                .or(file.server.admin_listen)
                .unwrap_or(d.admin_listen),
            allow_unauthenticated: cli.allow_unauthenticated
                || file.server.allow_unauthenticated.unwrap_or(false),
            admin_token: cli
                .admin_token
                .clone()
                .or(file.server.admin_token)
                .filter(|t| !t.is_empty())
                .map(Secret),
            tls,
            admin_tls,
            upstreams,
            policies: cli
                .policies
                .clone()
                .or(file.paths.policies)
                .unwrap_or(d.policies),
            schemas: cli
                .schemas
                .clone()
                .or(file.paths.schemas)
                .unwrap_or(d.schemas),
            body_limit: file.server.body_limit_bytes.unwrap_or(d.body_limit),
            stream_buffer_limit: file
                .server
                .stream_buffer_limit_bytes
                .unwrap_or(d.stream_buffer_limit),
            schema_cache_bytes: file
                .server
                .schema_cache_bytes
                .unwrap_or(d.schema_cache_bytes),
            format_limit: file.server.format_limit_bytes.unwrap_or(d.format_limit),
            client_header_timeout: ms(
                file.server.client_header_timeout_ms,
                d.client_header_timeout,
            ),
            drain_timeout: ms(file.server.drain_timeout_ms, d.drain_timeout),
            max_connections: file
                .server
                .max_connections
                .unwrap_or(d.max_connections)
                .max(1),
            forward_client_auth: file
                .upstream
                .forward_client_auth
                .unwrap_or(d.forward_client_auth),
            connect_timeout: ms(file.upstream.connect_timeout_ms, d.connect_timeout),
            first_byte_timeout: ms(file.upstream.first_byte_timeout_ms, d.first_byte_timeout),
            idle_timeout: ms(file.upstream.idle_timeout_ms, d.idle_timeout),
            warm_connections: file.upstream.warm_connections.unwrap_or(d.warm_connections),
            capabilities_ttl: ms(file.upstream.capabilities_ttl_ms, d.capabilities_ttl),
            health_interval: ms(file.upstream.health_interval_ms, d.health_interval)
                .max(Duration::from_millis(100)),
            models_refresh: ms(file.upstream.models_refresh_ms, d.models_refresh)
                .max(Duration::from_millis(100)),
            listing_timeout: ms(file.upstream.listing_timeout_ms, d.listing_timeout)
                .max(Duration::from_millis(1)),
            dns_server: cli.dns_server.or(file.upstream.dns_server),
            log_format: file.log.format.unwrap_or(d.log_format),
            log_level: file.log.level.unwrap_or(d.log_level),
            limit_store: match file.limits.store {
                Some(s) => parse_limit_store(&s)?,
                None => d.limit_store,
            },
            limit_store_timeout: ms(file.limits.store_timeout_ms, d.limit_store_timeout)
                .max(Duration::from_millis(1)),
            limit_key_prefix: match file.limits.key_prefix {
                Some(p) => parse_key_prefix(&p)?,
                None => d.limit_key_prefix,
            },
            traces,
        })
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
