//! Reading policy, `format` schema and TLS certificate files without ever
//! waiting on one.
//!
//! Only regular files are read (a symlink counts as what it points to): a
//! FIFO, socket or device in the policies or schemas directory is refused
//! with an error naming what it is, from its metadata alone, so it is
//! never opened. The file is then opened non-blocking and checked again
//! on the open descriptor (it may have been swapped in between), and read
//! up to a bound. A start or a reload therefore never hangs on a file,
//! and the next edit applies as usual.

use std::{
    fs::{File, FileType, Metadata},
    io::{self, Read},
    path::Path,
};

/// What a file that is not a regular file is, for error messages.
fn kind(t: &FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        return "a directory";
    }
    "a special file"
}

/// `Ok` for a regular file; otherwise the error that refuses it.
pub(crate) fn check(meta: &Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "not a regular file but {}; only regular files (or symlinks to them) are read",
            kind(&meta.file_type())
        ),
    ))
}

/// Open `path` for reading without blocking on a FIFO or device.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    options.open(path)
}

/// The bytes of the regular file at `path` (symlinks followed), at most
/// `limit + 1` of them: a caller that gets more than `limit` refuses the
/// file as too large. Anything but a regular file is refused unopened.
pub(crate) fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    check(&std::fs::metadata(path)?)?;
    let file = open_nonblocking(path)?;
    check(&file.metadata()?)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(all(test, unix))]
#[path = "regular_tests.rs"]
mod tests;
