//! A value kept out of logs and `Debug` output (API keys, the admin
//! token), compared in constant time.

use subtle::ConstantTimeEq;

/// A value kept out of logs and `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub(crate) String);

impl Secret {
    /// A secret holding `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Whether `presented` is the secret, compared in constant time.
    pub fn matches(&self, presented: &[u8]) -> bool {
        bool::from(self.0.as_bytes().ct_eq(presented))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[cfg(test)]
#[path = "secret_tests.rs"]
mod tests;
