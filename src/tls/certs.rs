//! [`CertStore`]: the certificate a listener presents, swapped whole when
//! its files change.
//!
//! A reload reads both files, parses them and checks that the key belongs
//! to the certificate (fallible), then swaps (one `ArcSwap::store`). A pair
//! that fails any step leaves the one in use in place, counted in
//! `augur_tls_reloads_total{outcome="rejected"}` and logged once per
//! distinct content: the same files are not parsed again until they change.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
};

use arc_swap::ArcSwap;
use rustls::{
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use sha2::{Digest, Sha256};

use crate::config::TlsFiles;

/// A certificate or key that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read TLS {what} file {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid TLS file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("the TLS private key in {key} does not match the certificate in {cert}")]
    Mismatch { cert: PathBuf, key: PathBuf },
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

/// Largest certificate or key file read (a chain is a few KiB).
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What a reload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reloaded {
    /// The files hold what was last read: nothing parsed.
    Unchanged,
    /// A new pair is in use.
    Loaded,
    /// The new content was refused; the pair in use stays.
    Rejected,
}

#[derive(Debug, Default)]
struct ReloadState {
    /// Hash of the last content read (or of the error reading it),
    /// accepted or not.
    last_seen: [u8; 32],
    /// Why the newest content was refused; `None` once a pair loads.
    last_error: Option<String>,
}

/// Holds one listener's certificate and key, and reloads them from disk.
#[derive(Debug)]
pub(crate) struct CertStore {
    current: ArcSwap<CertifiedKey>,
    files: TlsFiles,
    /// `proxy` or `admin`, for logs and metrics.
    listener: &'static str,
    provider: Arc<CryptoProvider>,
    state: Mutex<ReloadState>,
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // Each handshake takes the pair in use at that moment; sessions
        // already established keep theirs.
        Some(self.current.load_full())
    }
}

impl CertStore {
    /// Load the pair; an error (augur must not start) names the file.
    pub(crate) fn open(
        files: &TlsFiles,
        listener: &'static str,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, TlsError> {
        let (texts, last_seen) = read_pair(files);
        let key = parse_pair(files, &texts?, &provider)?;
        Ok(Self {
            current: ArcSwap::from_pointee(key),
            files: files.clone(),
            listener,
            provider,
            state: Mutex::new(ReloadState {
                last_seen,
                last_error: None,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, ReloadState> {
        // A panic while holding the lock leaves only bookkeeping behind.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Re-read the files; parse and swap only if their content changed
    /// since the last read.
    pub(crate) fn reload(&self) -> Reloaded {
        let mut state = self.state();
        let (texts, seen) = read_pair(&self.files);
        if seen == state.last_seen {
            return Reloaded::Unchanged;
        }
        state.last_seen = seen;
        let listener = self.listener;
        match texts.and_then(|t| parse_pair(&self.files, &t, &self.provider)) {
            Ok(key) => {
                let fingerprint = leaf_sha256(&key);
                self.current.store(Arc::new(key));
                state.last_error = None;
                metrics::counter!("augur_tls_reloads_total", "listener" => listener, "outcome" => "success")
                    .increment(1);
                tracing::info!(listener, %fingerprint, "TLS certificate loaded");
                Reloaded::Loaded
            }
            Err(e) => {
                state.last_error = Some(e.to_string());
                metrics::counter!("augur_tls_reloads_total", "listener" => listener, "outcome" => "rejected")
                    .increment(1);
                let active = leaf_sha256(&self.current.load());
                tracing::error!(listener, error = %e, %active, "TLS certificate rejected; keeping the one in use");
                Reloaded::Rejected
            }
        }
    }

    /// SHA-256 of the certificate in use (as `openssl x509 -fingerprint
    /// -sha256` shows it, without the colons).
    pub(crate) fn fingerprint(&self) -> String {
        leaf_sha256(&self.current.load())
    }

    /// Why the newest content of the files was refused, if it was.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.state().last_error.clone()
    }

    pub(crate) fn files(&self) -> &TlsFiles {
        &self.files
    }
}

/// Both files' bytes, and a hash of them (or of the error reading them)
/// that tells whether anything changed since the last read.
type Texts = (Vec<u8>, Vec<u8>);

fn read_pair(files: &TlsFiles) -> (Result<Texts, TlsError>, [u8; 32]) {
    let texts = read_bounded(&files.cert, "certificate")
        .and_then(|cert| Ok((cert, read_bounded(&files.key, "private key")?)));
    let mut hash = Sha256::new();
    match &texts {
        Ok((cert, key)) => {
            hash.update((cert.len() as u64).to_le_bytes());
            hash.update(cert);
            hash.update(key);
        }
        Err(e) => {
            hash.update(b"error\0");
            hash.update(e.to_string());
        }
    }
    (texts, hash.finalize().into())
}

fn read_bounded(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    let read = |source| TlsError::Read {
        what,
        path: path.to_path_buf(),
        source,
    };
    // Regular files only, as policy files are read: a FIFO or device
    // would hold the start, or every reload after it, forever.
    let bytes = crate::policy::regular::read(path, MAX_FILE_BYTES).map_err(read)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(TlsError::Invalid {
            path: path.to_path_buf(),
            message: format!("larger than {MAX_FILE_BYTES} bytes"),
        });
    }
    Ok(bytes)
}

/// The chain and key, checked: at least one certificate, a key the
/// provider can sign with, and that key's public half in the leaf.
fn parse_pair(
    files: &TlsFiles,
    (cert, key): &Texts,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let invalid = |path: &Path, message: String| TlsError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(&files.cert, format!("bad PEM: {e}")))?;
    if chain.is_empty() {
        return Err(invalid(&files.cert, "no CERTIFICATE block".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| {
        invalid(
            &files.key,
            format!("no usable PRIVATE KEY block (PKCS#8, RSA or EC): {e}"),
        )
    })?;
    let signer = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| invalid(&files.key, format!("unsupported private key: {e}")))?;
    let certified = CertifiedKey::new(chain, signer);
    match certified.keys_match() {
        Ok(()) => Ok(certified),
        Err(rustls::Error::InconsistentKeys(_)) => Err(TlsError::Mismatch {
            cert: files.cert.clone(),
            key: files.key.clone(),
        }),
        Err(e) => Err(invalid(&files.cert, format!("bad certificate: {e}"))),
    }
}

fn leaf_sha256(key: &CertifiedKey) -> String {
    key.end_entity_cert()
        .map(|der| hex::encode_upper(Sha256::digest(der.as_ref())))
        .unwrap_or_default()
}
