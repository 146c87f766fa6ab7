//! Reading the policies directory: which files, in which order, and the
//! content hash that identifies a policy set.
//!
//! Files are `*.yaml` and `*.yml` directly in the directory (not below it),
//! in byte order of their names. Names starting with `.` are skipped: editor
//! swap files and the `..data` / `..2026_01_01…` entries of a Kubernetes
//! ConfigMap mount (its visible `x.yaml` symlinks are followed). A missing
//! directory is an empty one.

use std::{
    path::{Path, PathBuf},
    time::SystemTime,
};

use sha2::{Digest, Sha256};

use super::{compile::Builder, error::PolicyError, model::Policy, model::PolicyMeta};

/// Load and compile every policy file in `policies`, resolving `format`
/// schemas in `schemas`. For startup and `augur --check-config`.
pub fn load_dir(policies: &Path, schemas: &Path) -> Result<Policy, PolicyError> {
    attempt(policies, schemas).result
}

/// One read-and-compile pass.
pub(crate) struct Attempt {
    /// Hash of every file read (policies and referenced schemas), including
    /// read failures; equal fingerprints mean nothing changed on disk.
    pub fingerprint: String,
    pub result: Result<Policy, PolicyError>,
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// The policy files of `dir`, sorted by name. `Ok(empty)` when it is missing.
pub(crate) fn list_files(dir: &Path) -> Result<Vec<PathBuf>, PolicyError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(PolicyError::Io {
                file: display(dir),
                message: e.to_string(),
            });
        }
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_policy = name.ends_with(".yaml") || name.ends_with(".yml");
        if name.starts_with('.') || !is_policy {
            continue;
        }
        let path = entry.path();
        // Follows symlinks; a dangling one is reported when it is read.
        match std::fs::metadata(&path) {
            Ok(m) if !m.is_file() => continue,
            _ => files.push(path),
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// Read and compile the directory, fingerprinting what was read.
pub(crate) fn attempt(policies: &Path, schemas: &Path) -> Attempt {
    let mut hasher = Sha256::new();
    let files = match list_files(policies) {
        Ok(files) => files,
        Err(e) => {
            hasher.update(e.to_string());
            return finish_attempt(hasher, Err(e));
        }
    };
    let mut texts = Vec::with_capacity(files.len());
    let mut read_error = None;
    for path in &files {
        let name = display(path);
        hasher.update(name.as_bytes());
        hasher.update([0]);
        match std::fs::read_to_string(path) {
            Ok(text) => {
                hasher.update(text.as_bytes());
                hasher.update([0]);
                texts.push((name, text));
            }
            Err(e) => {
                let err = PolicyError::Io {
                    file: name,
                    message: e.to_string(),
                };
                hasher.update(err.to_string());
                read_error.get_or_insert(err);
            }
        }
    }
    if let Some(e) = read_error {
        return finish_attempt(hasher, Err(e));
    }
    let mut builder_hasher = Sha256::new();
    let mut builder = Builder::new(schemas, &mut builder_hasher);
    let mut result = Ok(());
    for (name, text) in &texts {
        result = builder.add_file(name, text);
        if result.is_err() {
            break;
        }
    }
    let names: Vec<String> = texts.into_iter().map(|(n, _)| n).collect();
    let result = result.map(|()| {
        builder.finish(PolicyMeta {
            version: String::new(),
            loaded_at: SystemTime::now(),
            files: names.clone(),
        })
    });
    hasher.update(builder_hasher.finalize());
    finish_attempt(hasher, result).with_empty_version(names.is_empty())
}

fn finish_attempt(hasher: Sha256, result: Result<Policy, PolicyError>) -> Attempt {
    let fingerprint = hex::encode(&hasher.finalize()[..8]);
    let result = result.map(|mut p| {
        p.meta.version = fingerprint.clone();
        p
    });
    Attempt {
        fingerprint,
        result,
    }
}

impl Attempt {
    /// An empty directory reports version "empty", like [`Policy::permissive`].
    fn with_empty_version(mut self, empty: bool) -> Self {
        if empty {
            self.fingerprint = "empty".to_string();
            if let Ok(p) = &mut self.result {
                p.meta.version = self.fingerprint.clone();
            }
        }
        self
    }
}
