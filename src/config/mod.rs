//! Startup configuration: command line, environment, `configs/augur.toml`.
//!
//! Precedence is flag > environment variable > config file > built-in
//! default. Everything here is read once at start; policies (see
//! [`crate::policy`]) are the part that reloads live. The upstream list
//! is resolved in [`upstreams`], the limit store in [`store`]; [`settings`]
//! holds the result, read from [`cli`] and [`file`].

mod cli;
mod dns;
mod error;
mod exposure;
mod file;
mod secret;
mod settings;
mod store;
mod tls;
mod traces;
mod upstreams;

pub use cli::{Cli, Command, DEFAULT_CONFIG_PATH, ReplayArgs, Timing};
pub use dns::{
    DEFAULT_INTERVAL as DEFAULT_RESOLVE_INTERVAL, DEFAULT_MAX_MEMBERS, DnsSpec,
    MAX_MEMBERS as MAX_DNS_MEMBERS,
};
pub use error::ConfigError;
pub use file::LogFormat;
pub use secret::Secret;
pub use settings::Config;
pub use store::LimitStore;
pub use tls::{TlsFiles, TlsFlags};
pub use traces::TraceSettings;
pub use upstreams::{MAX_UPSTREAMS, UpstreamSpec};
