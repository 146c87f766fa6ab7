//! The config file (`configs/augur.toml`), as written: every key
//! optional, unknown keys refused.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use serde::Deserialize;

use super::{error::ConfigError, traces, upstreams};

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The config file, as written. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    #[serde(default)]
    pub(super) server: FileServer,
    #[serde(default)]
    pub(super) upstream: FileUpstream,
    #[serde(default)]
    pub(super) upstreams: Vec<upstreams::FileUpstreamEntry>,
    #[serde(default)]
    pub(super) paths: FilePaths,
    #[serde(default)]
    pub(super) log: FileLog,
    #[serde(default)]
    pub(super) limits: FileLimits,
    #[serde(default)]
    pub(super) traces: traces::FileTraces,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileServer {
    pub(super) listen: Option<SocketAddr>,
    pub(super) admin_listen: Option<SocketAddr>,
    pub(super) allow_unauthenticated: Option<bool>,
    pub(super) admin_token: Option<String>,
    pub(super) tls_cert: Option<PathBuf>,
    pub(super) tls_key: Option<PathBuf>,
    pub(super) admin_tls_cert: Option<PathBuf>,
    pub(super) admin_tls_key: Option<PathBuf>,
    pub(super) body_limit_bytes: Option<u64>,
    pub(super) client_header_timeout_ms: Option<u64>,
    pub(super) drain_timeout_ms: Option<u64>,
    pub(super) stream_buffer_limit_bytes: Option<u64>,
    pub(super) max_connections: Option<usize>,
    pub(super) schema_cache_bytes: Option<u64>,
    pub(super) format_limit_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileUpstream {
    pub(super) url: Option<String>,
    pub(super) connect_timeout_ms: Option<u64>,
    pub(super) first_byte_timeout_ms: Option<u64>,
    pub(super) idle_timeout_ms: Option<u64>,
    pub(super) warm_connections: Option<usize>,
    pub(super) capabilities_ttl_ms: Option<u64>,
    pub(super) forward_client_auth: Option<bool>,
    pub(super) health_interval_ms: Option<u64>,
    pub(super) models_refresh_ms: Option<u64>,
    pub(super) listing_timeout_ms: Option<u64>,
    pub(super) dns_server: Option<SocketAddr>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FilePaths {
    pub(super) policies: Option<PathBuf>,
    pub(super) schemas: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    pub(super) store: Option<String>,
    pub(super) store_timeout_ms: Option<u64>,
    pub(super) key_prefix: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLog {
    pub(super) format: Option<LogFormat>,
    pub(super) level: Option<String>,
}

pub(super) fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_file(path, &text)
}

pub(super) fn parse_file(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}
