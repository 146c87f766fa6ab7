//! TLS on augur's listeners: `server.tls_cert` / `server.tls_key` for the
//! proxy, `server.admin_tls_cert` / `server.admin_tls_key` for the admin
//! listener (flags `--tls-cert`, ..., variables `AUGUR_TLS_CERT`, ...).
//! Both of a pair or neither; the files themselves are read and checked at
//! start by the TLS module, not here.

use std::path::PathBuf;

use super::{error::ConfigError, file::FileServer};

/// A certificate (PEM: the leaf first, then any intermediates) and its
/// private key (PEM: PKCS#8, PKCS#1 or SEC1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The TLS flags of the command line.
#[derive(Debug, Default, clap::Args)]
pub struct TlsFlags {
    /// TLS certificate (PEM, chain allowed) for the proxy listener; with --tls-key.
    #[arg(long = "tls-cert", value_name = "FILE", env = "AUGUR_TLS_CERT")]
    pub cert: Option<PathBuf>,
    /// TLS private key (PEM) for the proxy listener; with --tls-cert.
    #[arg(long = "tls-key", value_name = "FILE", env = "AUGUR_TLS_KEY")]
    pub key: Option<PathBuf>,
    /// TLS certificate (PEM) for the admin listener; with --admin-tls-key.
    #[arg(
        long = "admin-tls-cert",
        value_name = "FILE",
        env = "AUGUR_ADMIN_TLS_CERT"
    )]
    pub admin_cert: Option<PathBuf>,
    /// TLS private key (PEM) for the admin listener; with --admin-tls-cert.
    #[arg(
        long = "admin-tls-key",
        value_name = "FILE",
        env = "AUGUR_ADMIN_TLS_KEY"
    )]
    pub admin_key: Option<PathBuf>,
}

/// The proxy's and the admin listener's pairs, each file from its flag (or
/// environment variable) if set, else from the config file.
pub(super) fn resolve_listeners(
    flags: &TlsFlags,
    file: &FileServer,
) -> Result<(Option<TlsFiles>, Option<TlsFiles>), ConfigError> {
    let pick = |flag: &Option<PathBuf>, file: &Option<PathBuf>| flag.clone().or(file.clone());
    let proxy = resolve(
        ("server.tls_cert (--tls-cert)", "server.tls_key (--tls-key)"),
        pick(&flags.cert, &file.tls_cert),
        pick(&flags.key, &file.tls_key),
    )?;
    let admin = resolve(
        (
            "server.admin_tls_cert (--admin-tls-cert)",
            "server.admin_tls_key (--admin-tls-key)",
        ),
        pick(&flags.admin_cert, &file.admin_tls_cert),
        pick(&flags.admin_key, &file.admin_tls_key),
    )?;
    Ok((proxy, admin))
}

/// One listener's pair; `keys` names the two settings for the error.
fn resolve(
    keys: (&str, &str),
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
) -> Result<Option<TlsFiles>, ConfigError> {
    let set = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
    let missing = |(given, absent): (&str, &str)| {
        ConfigError::Tls(format!(
            "{given} is set but {absent} is not: give both or neither"
        ))
    };
    match (set(cert), set(key)) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
        (Some(_), None) => Err(missing(keys)),
        (None, Some(_)) => Err(missing((keys.1, keys.0))),
    }
}
