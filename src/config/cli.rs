//! The command line: each flag also reads its `AUGUR_*` environment
//! variable.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::tls::TlsFlags;

/// Default config file, used when it exists and no other is named.
pub const DEFAULT_CONFIG_PATH: &str = "configs/augur.toml";

/// Command line (each flag also reads its `AUGUR_*` environment variable).
#[derive(Debug, Parser, Default)]
#[command(name = "augur", version, about = "A reverse proxy for Ollama")]
pub struct Cli {
    /// Config file (TOML). Default: configs/augur.toml when present.
    #[arg(long, env = "AUGUR_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Address the proxy listens on.
    #[arg(long, env = "AUGUR_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Base URL of an Ollama server, optionally named (`NAME=URL`); repeat
    /// the flag (or separate with commas) for several.
    #[arg(long, env = "AUGUR_UPSTREAM", value_delimiter = ',')]
    pub upstream: Vec<String>,
    /// The DNS server (`IP:port`) `dns+http://` upstreams are looked up
    /// at; default: the system's (`/etc/resolv.conf`).
    #[arg(long, env = "AUGUR_DNS_SERVER")]
    pub dns_server: Option<SocketAddr>,
    /// Address of the admin listener (health, readiness, metrics, policies).
    #[arg(long, env = "AUGUR_ADMIN_LISTEN")]
    pub admin_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub tls: TlsFlags,
    /// Directory of policy files (*.yaml).
    #[arg(long, env = "AUGUR_POLICIES", global = true)]
    pub policies: Option<PathBuf>,
    /// Directory of named JSON schemas referenced by policies.
    #[arg(long, env = "AUGUR_SCHEMAS", global = true)]
    pub schemas: Option<PathBuf>,
    /// Validate the config and the policy files, then exit.
    #[arg(long)]
    pub check_config: bool,
    /// Serve on a non-loopback address with no API keys configured (anyone
    /// who reaches the port may generate and list models).
    #[arg(long, env = "AUGUR_ALLOW_UNAUTHENTICATED")]
    pub allow_unauthenticated: bool,
    /// Bearer token the admin listener requires (all but `/-/healthy`);
    /// needed when it listens on a non-loopback address.
    #[arg(long, env = "AUGUR_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What the binary does besides serving.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve recorded exchanges as an Ollama upstream, or check the
    /// current config and policies against them (`--check`).
    Replay(ReplayArgs),
}

/// How recorded upstream answers are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Timing {
    /// Every line at once.
    #[default]
    None,
    /// Each line at its recorded offset from the request.
    Recorded,
}

/// `augur replay FILE…`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Record files (JSON lines written by a `record:` policy).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Address the replay upstream listens on.
    #[arg(long, default_value = "127.0.0.1:11435")]
    pub listen: SocketAddr,
    /// Pace recorded answers as recorded, or send them at once.
    #[arg(long, value_enum, default_value_t = Timing::None)]
    pub timing: Timing,
    /// Send every recorded request through augur (this config and these
    /// policies) in front of the replay upstream; report what differs.
    #[arg(long)]
    pub check: bool,
    /// API key sent with each request under `--check` (recordings hold none).
    #[arg(long, env = "AUGUR_REPLAY_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
}
