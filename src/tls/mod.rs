//! HTTPS on augur's listeners (`server.tls_cert` / `server.tls_key`, and
//! the admin listener's `server.admin_tls_*`).
//!
//! * Versions: TLS 1.3 and 1.2 only ([`PROTOCOL_VERSIONS`]). rustls
//!   implements nothing older, so a TLS 1.0/1.1 client is refused in the
//!   handshake.
//! * ALPN: `h2`, then `http/1.1`. The connection is served by hyper's
//!   automatic builder, which speaks HTTP/2 when the client sends its
//!   preface (as it does once ALPN chose `h2`) and HTTP/1.1 otherwise.
//! * Crypto: rustls' `ring` provider, named explicitly: nothing installs a
//!   process-wide default provider.
//! * Rotation: the certificate is picked per handshake from a
//!   [`certs::CertStore`], which the task in [`watch`] reloads when the
//!   files change (events on their directories, plus a poll). A new pair
//!   is used only once both files parse and the key matches the
//!   certificate; anything else keeps the pair in use. Connections already
//!   open keep their session; new handshakes get the new certificate.
//! * The handshake runs in each connection's own task, bounded by
//!   [`HANDSHAKE_TIMEOUT`] (see [`accept`]), never in the accept loop.

pub(crate) mod accept;
mod certs;
mod watch;

use std::{sync::Arc, time::Duration};

use rustls::{ServerConfig, SupportedProtocolVersion, version};
use tokio::sync::watch as channel;
pub(crate) use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use certs::CertStore;
pub(crate) use certs::TlsError;

/// TLS 1.3 and TLS 1.2: exactly rustls' defaults
/// (`rustls::DEFAULT_VERSIONS`), written out so that the accepted versions
/// are visible here. rustls has no TLS 1.1, 1.0 or SSL at all.
pub(crate) const PROTOCOL_VERSIONS: &[&SupportedProtocolVersion] =
    &[&version::TLS13, &version::TLS12];

/// ALPN protocols offered, in order of preference.
pub(crate) const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];

/// Longest a TLS handshake may take, counted from the client's first byte.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One listener's TLS: its server config, whose certificate comes from a
/// store that reloads from the files.
#[derive(Clone)]
pub struct ServerTls {
    store: Arc<CertStore>,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("files", self.store.files())
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Load `files` for `listener` (`"proxy"` or `"admin"`: a label for
    /// logs and metrics). Fails, naming the file, if either cannot be read
    /// or parsed or the key does not match the certificate.
    pub fn load(files: &TlsFiles, listener: &'static str) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let store = Arc::new(CertStore::open(files, listener, provider.clone())?);
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(PROTOCOL_VERSIONS)
            .map_err(|e| TlsError::Setup(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(store.clone());
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Self {
            store,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// What the listener's accept loop takes.
    pub fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    /// The reload task: file events (debounced), SIGHUP and a poll every
    /// [`POLL_INTERVAL`]. It ends when `shutdown` turns true or its
    /// sender is dropped.
    pub fn reloading(
        &self,
        shutdown: channel::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        watch::run(self.store.clone(), shutdown)
    }

    /// Re-read the files now, on this thread (blocking file reads); returns
    /// whether a new pair is in use. A refused pair is reported by
    /// [`ServerTls::last_error`].
    pub fn reload_now(&self) -> bool {
        self.store.reload() == certs::Reloaded::Loaded
    }

    /// The certificate and key files.
    pub fn files(&self) -> &TlsFiles {
        self.store.files()
    }

    /// SHA-256 of the certificate in use, in upper-case hex.
    pub fn fingerprint(&self) -> String {
        self.store.fingerprint()
    }

    /// Why the files' newest content was refused, if it was.
    pub fn last_error(&self) -> Option<String> {
        self.store.last_error()
    }
}

#[cfg(test)]
mod tests;
