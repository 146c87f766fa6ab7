//! Reading and compiling a policy set: the policy files a [`listing`] found
//! (each read within the bounds of [`super::bounds`]), the fingerprint that
//! identifies their content, and the compile into a [`Policy`].
//!
//! The fingerprint hashes each file's name and text, and the `format`
//! schema files the set names, so equal fingerprints mean an equal policy
//! and the set need not be parsed again. It is the policy's version.
//!
//! [`listing`]: super::listing

use std::{path::Path, time::SystemTime};

use sha2::{Digest, Sha256};

use super::{
    bounds::{MAX_FILE_BYTES, MAX_TOTAL_BYTES},
    compile::Builder,
    error::PolicyError,
    listing::{self, PolicyFile},
    regular,
    schemas::SchemaReads,
    snapshot::{Policy, PolicyMeta},
};

/// Version of a set with no policy files.
pub(crate) const EMPTY: &str = "empty";

/// Load and compile every policy file in `policies`, resolving `format`
/// schemas in `schemas`. For startup and `augur --check-config`; a missing
/// directory is an error ([`PolicyError::MissingDir`]), an empty one is
/// [`Policy::permissive`].
pub fn load_dir(policies: &Path, schemas: &Path) -> Result<Policy, PolicyError> {
    let files = listing::list(policies, schemas, &[]).files?;
    compile(&read(&files)?, schemas).result
}

/// Compile policy texts given as `(file name, text)` in merge order, under
/// the same bounds as files read from a directory (the fuzz targets' way
/// in, and a way to check a set before writing it).
pub fn load_texts(files: &[(String, String)], schemas: &Path) -> Result<Policy, PolicyError> {
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    for (name, text) in files {
        let limit = |message: String| PolicyError::Limit {
            file: name.clone(),
            message,
        };
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(limit(format!(
                "more than the limit of {MAX_FILE_BYTES} bytes per policy file"
            )));
        }
        total += text.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(limit(format!(
                "policy files together hold more than the limit of {MAX_TOTAL_BYTES} bytes"
            )));
        }
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    let texts = Texts {
        files: files.to_vec(),
        hash: hasher.finalize().into(),
    };
    compile(&texts, schemas).result
}

/// The texts of a policy set, in merge order, and the hash of them.
#[derive(Debug)]
pub(crate) struct Texts {
    files: Vec<(String, String)>,
    hash: [u8; 32],
}

/// Read `files`, refusing any over [`MAX_FILE_BYTES`], a set over
/// [`MAX_TOTAL_BYTES`] (they may have grown since they were listed), and
/// any that is not a regular file (it may have been swapped since).
/// Nothing here waits on a file (see [`regular`]).
pub(crate) fn read(files: &[PolicyFile]) -> Result<Texts, PolicyError> {
    let mut hasher = Sha256::new();
    let mut out = Vec::with_capacity(files.len());
    let mut total = 0u64;
    for f in files {
        let io = |message: String| PolicyError::Io {
            file: f.name.clone(),
            message,
        };
        let bytes = regular::read(&f.path, MAX_FILE_BYTES).map_err(|e| io(e.to_string()))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(PolicyError::Limit {
                file: f.name.clone(),
                message: format!("more than the limit of {MAX_FILE_BYTES} bytes per policy file"),
            });
        }
        total += bytes.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(PolicyError::Limit {
                file: f.name.clone(),
                message: format!(
                    "policy files together hold more than the limit of {MAX_TOTAL_BYTES} bytes"
                ),
            });
        }
        let text = String::from_utf8(bytes).map_err(|_| io("not UTF-8 text".into()))?;
        hasher.update(f.name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
        out.push((f.name.clone(), text));
    }
    Ok(Texts {
        files: out,
        hash: hasher.finalize().into(),
    })
}

/// The fingerprint of `texts` with the schema files hashed as `schemas`.
pub(crate) fn fingerprint(texts: &Texts, schemas: [u8; 32]) -> String {
    if texts.files.is_empty() {
        return EMPTY.to_string();
    }
    let mut h = Sha256::new();
    h.update(texts.hash);
    h.update(schemas);
    hex::encode(&h.finalize()[..8])
}

/// The fingerprint of a set refused before it was compiled.
pub(crate) fn refused_fingerprint(e: &PolicyError) -> String {
    let h = Sha256::digest(e.to_string().as_bytes());
    format!("refused:{}", hex::encode(&h[..8]))
}

/// One compile of a policy set.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub fingerprint: String,
    pub result: Result<Policy, PolicyError>,
    /// The `format` schema files read, in the order read.
    pub schema_names: Vec<String>,
}

/// Parse, validate and merge `texts`; stops at the first broken file.
pub(crate) fn compile(texts: &Texts, schemas_dir: &Path) -> Compiled {
    let mut schemas = SchemaReads::new(schemas_dir);
    let mut builder = Builder::new(&mut schemas);
    let mut result = Ok(());
    for (name, text) in &texts.files {
        result = builder.add_file(name, text);
        if result.is_err() {
            break;
        }
    }
    let last_file = texts
        .files
        .last()
        .map(|(n, _)| n.clone())
        .unwrap_or_default();
    let result = result.and_then(|()| {
        builder.finish(
            PolicyMeta {
                version: String::new(),
                loaded_at: SystemTime::now(),
                files: texts.files.iter().map(|(n, _)| n.clone()).collect(),
                sources: Default::default(),
            },
            &last_file,
        )
    });
    let (schema_hash, schema_names) = schemas.finish();
    let fingerprint = fingerprint(texts, schema_hash);
    let result = result.map(|mut p| {
        p.meta.version = fingerprint.clone();
        p
    });
    Compiled {
        fingerprint,
        result,
        schema_names,
    }
}
