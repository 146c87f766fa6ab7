//! The cache key: SHA-256 over who may share the answer (the principal,
//! or the policy's `share` group), the route, the request body in
//! canonical form, whether the answer streams, the model build (its
//! digest, as the upstream reports it) and the policy version. Each part
//! is length-prefixed, so no two different sets of parts hash alike.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::entry::Key;

/// Whose entries a request may read; each kind its own namespace, so no
/// key id or group name can read another's entries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// The principal of one API key (its id).
    Key(&'a str),
    /// Clients without a key (the principal labelled `anonymous`).
    Anonymous,
    /// Every principal whose policy names this `share` group.
    Group(&'a str),
}

/// Everything that makes two requests the same.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub scope: Scope<'a>,
    pub route: &'a str,
    pub body: &'a Value,
    /// The effective mode: a streamed and a whole answer differ.
    pub stream: bool,
    pub digest: &'a str,
    pub policy_version: &'a str,
}

/// The key of `parts`.
pub(crate) fn key(parts: &Parts<'_>) -> Key {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    match parts.scope {
        Scope::Key(id) => {
            field(b"key");
            field(id.as_bytes());
        }
        Scope::Anonymous => field(b"anonymous"),
        Scope::Group(name) => {
            field(b"group");
            field(name.as_bytes());
        }
    }
    field(parts.route.as_bytes());
    field(canonical(parts.body).as_bytes());
    field(if parts.stream { b"stream" } else { b"whole" });
    field(parts.digest.as_bytes());
    field(parts.policy_version.as_bytes());
    h.finalize().into()
}

/// `value` as compact JSON with every object's keys sorted: the same
/// request written with other whitespace or key order reads the same.
pub(crate) fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
#[path = "key_tests.rs"]
mod tests;
