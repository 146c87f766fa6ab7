//! [`PolicyError`]: why a policy set was rejected. Every message starts with
//! the file it is about, e.g.
//! `policies/10-limits.yaml: models."gemma3:[": invalid glob: unclosed character class`.

/// A rejected policy set. `Clone` so the store can keep the last one for
/// `GET /-/policies`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A file or directory could not be read.
    #[error("{file}: cannot read: {message}")]
    Io { file: String, message: String },
    /// The policies directory does not exist. At start augur refuses to
    /// run; later the active policy stays.
    #[error(
        "{dir}: the policies directory does not exist (create it, empty for no auth and no \
         limits, or point --policies / AUGUR_POLICIES at the right one)"
    )]
    MissingDir { dir: String },
    /// Every policy file disappeared while a policy from files was active.
    #[error(
        "{dir}: no policy files left (the active policy has {active}); to run without \
         policies on purpose, keep a file with no settings, e.g. 00-empty.yaml holding {{}}"
    )]
    NoFiles { dir: String, active: usize },
    /// Over a bound of [`super::bounds`] (size, count, nesting, values).
    #[error("{file}: {message}")]
    Limit { file: String, message: String },
    /// Not YAML.
    #[error("{file}: invalid YAML: {message}")]
    Yaml { file: String, message: String },
    /// Valid YAML that breaks `schemas/policy.schema.json`.
    #[error("{file}: {message}")]
    Schema { file: String, message: String },
    /// Passes the schema but cannot be compiled: a bad glob, a missing or
    /// invalid format schema, an unset `key_env`, a duplicate key id.
    #[error("{file}: {at}: {message}")]
    Invalid {
        file: String,
        at: String,
        message: String,
    },
}

impl PolicyError {
    /// The file the error is about.
    pub fn file(&self) -> &str {
        match self {
            Self::MissingDir { dir } | Self::NoFiles { dir, .. } => dir,
            Self::Io { file, .. }
            | Self::Limit { file, .. }
            | Self::Yaml { file, .. }
            | Self::Schema { file, .. }
            | Self::Invalid { file, .. } => file,
        }
    }

    pub(crate) fn invalid(file: &str, at: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            file: file.to_string(),
            at: at.into(),
            message: message.into(),
        }
    }
}
