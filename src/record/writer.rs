//! One writer thread per record file, fed through a bounded channel: a
//! request hands its line over without waiting, and a line that finds the
//! channel full is dropped and counted in `augur_record_dropped_total`.
//! The thread appends each line, rotating the file at the `max_bytes` of
//! the policy the line was recorded under (`file` → `file.1` → … →
//! `file.<keep>`, the oldest removed), and ends when every sender is gone.

use std::{
    collections::HashMap,
    fs::{self, File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::sync::mpsc;

use crate::policy::RecordPolicy;

/// Lines waiting for one file's writer.
pub(crate) const CHANNEL: usize = 64;
/// Most record files open at once (a policy naming more records none past it).
const MAX_FILES: usize = 64;

/// A line, with the rotation its policy asked for when it was recorded
/// (a policy edit applies from the next line on).
struct Line {
    text: String,
    max_bytes: u64,
    keep: u32,
}

/// Where one file's lines go, under one policy's rotation.
#[derive(Clone)]
pub(crate) struct Sink {
    tx: mpsc::Sender<Line>,
    max_bytes: u64,
    keep: u32,
}

impl Sink {
    /// Hand `line` to the writer; dropped (and counted) when it is behind.
    pub(super) fn send(&self, text: String) {
        let line = Line {
            text,
            max_bytes: self.max_bytes,
            keep: self.keep,
        };
        if self.tx.try_send(line).is_err() {
            metrics::counter!("augur_record_dropped_total").increment(1);
        }
    }
}

/// The writers of every record file, one per path.
#[derive(Default)]
pub(crate) struct Sinks {
    open: Mutex<HashMap<PathBuf, mpsc::Sender<Line>>>,
    /// Nothing is recorded (`augur replay --check` replays a recording).
    off: AtomicBool,
}

impl Sinks {
    /// Record nothing from now on.
    pub(crate) fn turn_off(&self) {
        self.off.store(true, Ordering::Relaxed);
    }

    /// The sink of `policy`'s file, its writer started on first use;
    /// `None` past [`MAX_FILES`] files or when no thread can start.
    pub(crate) fn sink(&self, policy: &RecordPolicy) -> Option<Sink> {
        if self.off.load(Ordering::Relaxed) {
            return None;
        }
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let sink = |tx: &mpsc::Sender<Line>| Sink {
            tx: tx.clone(),
            max_bytes: policy.max_bytes,
            keep: policy.keep,
        };
        if let Some(tx) = open.get(&policy.path) {
            return Some(sink(tx));
        }
        if open.len() >= MAX_FILES {
            tracing::warn!(path = %policy.path.display(), "too many record files; not recording");
            return None;
        }
        let (tx, rx) = mpsc::channel(CHANNEL);
        let file = Rotating {
            path: policy.path.clone(),
            file: None,
            size: 0,
        };
        let started = std::thread::Builder::new()
            .name("augur-record".into())
            .spawn(move || write_all(rx, file));
        if let Err(e) = started {
            tracing::warn!(error = %e, "cannot start the record writer");
            return None;
        }
        let made = sink(&tx);
        open.insert(policy.path.clone(), tx);
        Some(made)
    }
}

/// A file that rotates.
struct Rotating {
    path: PathBuf,
    file: Option<File>,
    size: u64,
}

/// Append each line; a failure is logged once until a line is written
/// again (the file is opened afresh for the next line).
fn write_all(mut rx: mpsc::Receiver<Line>, mut file: Rotating) {
    let mut failing = false;
    while let Some(mut line) = rx.blocking_recv() {
        line.text.push('\n');
        match file.write(&line) {
            Ok(()) => failing = false,
            Err(e) => {
                if !failing {
                    tracing::warn!(path = %file.path.display(), error = %e, "cannot write the record file");
                }
                failing = true;
                file.file = None;
            }
        }
    }
}

impl Rotating {
    /// Append `line`, the file rotated first when it would grow past the
    /// line's `max_bytes`.
    fn write(&mut self, line: &Line) -> std::io::Result<()> {
        if self.file.is_none() {
            self.open()?;
        }
        let bytes = line.text.as_bytes();
        if self.size > 0 && self.size + bytes.len() as u64 > line.max_bytes {
            self.file = None;
            rotate(&self.path, line.keep)?;
            self.open()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    fn open(&mut self) -> std::io::Result<()> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }
}

fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// `path` → `path.1`, each `path.n` → `path.n+1`, past `keep` removed.
fn rotate(path: &Path, keep: u32) -> std::io::Result<()> {
    if keep == 0 {
        return fs::remove_file(path);
    }
    let _ = fs::remove_file(numbered(path, keep));
    for n in (1..keep).rev() {
        let from = numbered(path, n);
        if from.exists() {
            fs::rename(&from, numbered(path, n + 1))?;
        }
    }
    fs::rename(path, numbered(path, 1))
}
