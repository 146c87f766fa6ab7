//! The cheap look at the policies directory that decides whether anything
//! needs reading: which policy files there are and, from their metadata
//! alone, whether any changed since the last look. Nothing is opened.
//!
//! Files are `*.yaml` and `*.yml` directly in the directory (not below it),
//! in byte order of their names. Names starting with `.` are skipped: editor
//! swap files and the `..data` / `..2026_01_01…` entries of a Kubernetes
//! ConfigMap mount (its visible `x.yaml` symlinks are followed).
//!
//! The signature of a look hashes, per file, its name, symlink target,
//! size, modification and change times, inode and device, and the same for
//! each `format` schema file the last compile read. The count and size
//! bounds of [`super::bounds`] are checked here, before anything is read,
//! and so is the file type: anything but a regular file (after symlinks) is
//! refused with an error naming it, since opening a FIFO could block.

use std::{
    fs::Metadata,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use super::{
    bounds::{MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES},
    error::PolicyError,
    regular,
};

/// One policy file to read.
#[derive(Debug, Clone)]
pub(crate) struct PolicyFile {
    pub path: PathBuf,
    /// The path as shown in errors and at `GET /-/policies`.
    pub name: String,
}

/// The result of one look at the directory.
#[derive(Debug)]
pub(crate) struct Listing {
    /// Equal signatures: nothing changed on disk since the last look.
    pub signature: [u8; 32],
    /// The files to read, in merge order, or why the set is refused.
    pub files: Result<Vec<PolicyFile>, PolicyError>,
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

fn is_policy_name(name: &str) -> bool {
    !name.starts_with('.') && (name.ends_with(".yaml") || name.ends_with(".yml"))
}

/// Hash what identifies a file's content without reading it.
fn hash_metadata(h: &mut Sha256, m: &Metadata) {
    h.update(m.len().to_le_bytes());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        for v in [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()] {
            h.update(v.to_le_bytes());
        }
        h.update(m.ino().to_le_bytes());
        h.update(m.dev().to_le_bytes());
    }
    #[cfg(not(unix))]
    if let Ok(t) = m.modified()
        && let Ok(d) = t.duration_since(std::time::UNIX_EPOCH)
    {
        h.update(d.as_nanos().to_le_bytes());
    }
}

/// Hash the metadata of `path` (following symlinks), or why it has none.
pub(crate) fn hash_path(h: &mut Sha256, path: &Path) {
    h.update(path.as_os_str().as_encoded_bytes());
    h.update([0]);
    match std::fs::metadata(path) {
        Ok(m) => hash_metadata(h, &m),
        Err(e) => h.update(format!("error: {}", e.kind())),
    }
}

/// Look at `dir`, and at the schema files `schema_names` in `schemas_dir`.
pub(crate) fn list(dir: &Path, schemas_dir: &Path, schema_names: &[String]) -> Listing {
    let mut h = Sha256::new();
    let files = list_into(&mut h, dir);
    if let Err(e) = &files {
        h.update(e.to_string());
    }
    h.update([0xff]);
    for name in schema_names {
        hash_path(&mut h, &schemas_dir.join(name));
    }
    Listing {
        signature: h.finalize().into(),
        files,
    }
}

fn list_into(h: &mut Sha256, dir: &Path) -> Result<Vec<PolicyFile>, PolicyError> {
    let io = |e: std::io::Error| PolicyError::Io {
        file: display(dir),
        message: e.to_string(),
    };
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PolicyError::MissingDir { dir: display(dir) });
        }
        Err(e) => return Err(io(e)),
    };
    if !meta.is_dir() {
        return Err(io(std::io::Error::other("not a directory")));
    }
    hash_metadata(h, &meta);
    let mut candidates = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // The entry type comes with the listing; a symlink is checked below.
        if !is_policy_name(name) || entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        candidates.push(entry.path());
        if candidates.len() > MAX_FILES {
            let message = format!("holds more than the limit of {MAX_FILES} policy files");
            return Err(PolicyError::Limit {
                file: display(dir),
                message,
            });
        }
    }
    candidates.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    let mut files = Vec::with_capacity(candidates.len());
    let mut total = 0u64;
    for path in candidates {
        let name = display(&path);
        h.update(name.as_bytes());
        h.update([0]);
        if let Ok(target) = std::fs::read_link(&path) {
            h.update(target.as_os_str().as_encoded_bytes());
        }
        h.update([0]);
        match std::fs::metadata(&path) {
            // A symlink to a directory is not a policy file.
            Ok(m) if m.is_dir() => continue,
            Ok(m) => {
                // A FIFO, socket or device (or a symlink to one) is
                // refused here, from its metadata: opening it could block.
                if let Err(e) = regular::check(&m) {
                    return Err(PolicyError::Io {
                        file: name,
                        message: e.to_string(),
                    });
                }
                hash_metadata(h, &m);
                if m.len() > MAX_FILE_BYTES {
                    let message = format!(
                        "{} bytes, more than the limit of {MAX_FILE_BYTES} bytes per policy file",
                        m.len()
                    );
                    return Err(PolicyError::Limit {
                        file: name,
                        message,
                    });
                }
                total += m.len();
            }
            // A dangling symlink: reading it reports the error.
            Err(e) => h.update(format!("error: {}", e.kind())),
        }
        files.push(PolicyFile { path, name });
    }
    if total > MAX_TOTAL_BYTES {
        let message = format!(
            "{total} bytes of policy files, more than the limit of {MAX_TOTAL_BYTES} bytes"
        );
        return Err(PolicyError::Limit {
            file: display(dir),
            message,
        });
    }
    Ok(files)
}
