//! Why a config cannot be used.

use std::path::PathBuf;

/// A config that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid upstream URL {url:?}: {message}")]
    Upstream { url: String, message: String },
    #[error("invalid upstreams: {0}")]
    Upstreams(String),
    #[error("invalid limits.store {value:?}: {message}")]
    LimitStore { value: String, message: String },
    #[error("invalid TLS settings: {0}")]
    Tls(String),
    #[error("invalid traces settings: {0}")]
    Traces(String),
}
