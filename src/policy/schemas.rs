//! Reading the `format` schema files policies name: each bounded by
//! [`MAX_FILE_BYTES`], hashed into the policy version, and remembered by
//! name so the next look at the directory can check their metadata and
//! the next read can hash them again without compiling.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{bounds::MAX_FILE_BYTES, regular};

/// Read `path`, refusing more than [`MAX_FILE_BYTES`] bytes, and anything
/// but a regular file (unopened: a FIFO there never blocks a reload).
pub(crate) fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let bytes = regular::read(path, MAX_FILE_BYTES).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "more than the limit of {MAX_FILE_BYTES} bytes per file"
        ));
    }
    Ok(bytes)
}

/// The schema files read by one compile, in the order first read.
#[derive(Debug)]
pub(crate) struct SchemaReads {
    dir: PathBuf,
    hasher: Sha256,
    names: Vec<String>,
}

impl SchemaReads {
    pub(super) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            hasher: Sha256::new(),
            names: Vec::new(),
        }
    }

    /// The directory names are resolved in.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Read the schema file `name` (already checked to be a plain relative
    /// name) and hash it, or the reason it cannot be read.
    pub(super) fn read(&mut self, name: &str) -> Result<Vec<u8>, String> {
        let result = read_bounded(&self.dir.join(name));
        self.hasher.update(name.as_bytes());
        self.hasher.update([0]);
        match &result {
            Ok(bytes) => self.hasher.update(bytes),
            Err(e) => self.hasher.update(format!("error: {e}")),
        }
        self.hasher.update([0]);
        self.names.push(name.to_string());
        result
    }

    /// The hash of everything read, and the names in the order read.
    pub(super) fn finish(self) -> ([u8; 32], Vec<String>) {
        (self.hasher.finalize().into(), self.names)
    }
}

/// Read and hash `names` again, as a compile that reads them in this
/// order would: equal hashes mean the schemas did not change.
pub(crate) fn rehash(dir: &Path, names: &[String]) -> ([u8; 32], Vec<String>) {
    let mut reads = SchemaReads::new(dir);
    for name in names {
        let _ = reads.read(name);
    }
    reads.finish()
}
