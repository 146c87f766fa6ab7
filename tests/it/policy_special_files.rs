//! Special files in the policies and schemas directories: a FIFO (or a
//! symlink to one, or a socket) named like a policy file, or a FIFO where
//! a `format` schema file should be, is refused with an error naming it,
//! unopened, so the reloader never blocks on it; the active policy stays
//! and the next edit applies.

#![cfg(unix)]
// Test helpers outside `#[test]` fns: a failed setup should panic.
#![allow(clippy::unwrap_used)]

use std::{
    fs,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use augur::policy::{EmulateTools, PolicyStore};
use tokio::sync::watch;

const ALWAYS: &str = "defaults: {emulate_tools: always}\n";
const NEVER: &str = "defaults: {emulate_tools: never}\n";
const SCHEMA: &str = "defaults: {format: {schema: answer.json}}\n";

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Releases any reader blocked on the FIFOs (augur before the fix), so a
/// failing test ends instead of hanging its runtime's shutdown: opening a
/// FIFO read-write never blocks and lets a blocked open through; the
/// FIFO is then removed, and closing the last writer gives readers EOF.
struct Unblock(Vec<PathBuf>);

impl Drop for Unblock {
    fn drop(&mut self) {
        let held: Vec<fs::File> = self
            .0
            .iter()
            .filter_map(|p| fs::File::options().read(true).write(true).open(p).ok())
            .collect();
        for p in &self.0 {
            let _ = fs::remove_file(p);
        }
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
    }
}

struct Fixture {
    policies: tempfile::TempDir,
    schemas: tempfile::TempDir,
    store: Arc<PolicyStore>,
    _stop: watch::Sender<bool>,
}

impl Fixture {
    /// A store over `files`, with the watcher running and settled.
    async fn start(files: &[(&str, &str)]) -> Self {
        let policies = tempfile::tempdir().unwrap();
        let schemas = tempfile::tempdir().unwrap();
        fs::write(schemas.path().join("answer.json"), r#"{"type":"object"}"#).unwrap();
        for (name, text) in files {
            fs::write(policies.path().join(name), text).unwrap();
        }
        let store = Arc::new(PolicyStore::open(policies.path(), schemas.path()).unwrap());
        let (stop, rx) = watch::channel(false);
        tokio::spawn(store.clone().reloading(rx));
        tokio::time::sleep(Duration::from_millis(150)).await;
        Self {
            policies,
            schemas,
            store,
            _stop: stop,
        }
    }

    fn dir(&self) -> &Path {
        self.policies.path()
    }

    fn emulate(&self) -> EmulateTools {
        self.store.snapshot().model("gemma3").emulate_tools
    }

    /// The rejection `GET /-/policies` shows, once there is one (2 s).
    async fn rejection(&self) -> String {
        within_2s("rejection shown", || {
            self.store.status_json()["last_error"].is_string()
        })
        .await;
        self.store.status_json()["last_error"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// Poll `cond` for up to 2 s (the reload promise).
async fn within_2s(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "not within 2 s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_fifo_policy_file_is_refused_and_later_edits_apply() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let fifo = f.dir().join("20-pipe.yaml");
    mkfifo(&fifo);
    let _unblock = Unblock(vec![fifo.clone()]);
    let error = f.rejection().await;
    assert!(error.contains("20-pipe.yaml"), "{error}");
    assert!(error.contains("named pipe (FIFO)"), "{error}");
    assert_eq!(f.emulate(), EmulateTools::Always);
    // The reloader is not stuck: removing it and editing applies.
    fs::remove_file(&fifo).unwrap();
    fs::write(f.dir().join("10-a.yaml"), NEVER).unwrap();
    within_2s("edit after the FIFO", || f.emulate() == EmulateTools::Never).await;
    assert_eq!(f.store.status().last_error, None);
    // SIGHUP's path (a forced reload) refuses it at once too.
    mkfifo(&fifo);
    let e = f.store.reload_now().unwrap_err();
    assert!(e.to_string().contains("20-pipe.yaml"), "{e}");
}

#[tokio::test]
async fn a_symlink_to_a_fifo_or_a_socket_is_refused_and_later_edits_apply() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let fifo = elsewhere.path().join("pipe");
    mkfifo(&fifo);
    let _unblock = Unblock(vec![fifo.clone()]);
    let link = f.dir().join("20-link.yaml");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let error = f.rejection().await;
    assert!(error.contains("20-link.yaml"), "{error}");
    assert!(error.contains("named pipe (FIFO)"), "{error}");
    // Replaced by a socket: refused as one.
    fs::remove_file(&link).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(&link).unwrap();
    within_2s("socket refused", || {
        f.store
            .status()
            .last_error
            .is_some_and(|e| e.contains("20-link.yaml") && e.contains("a socket"))
    })
    .await;
    assert_eq!(f.emulate(), EmulateTools::Always);
    // Replaced by a regular file: applied.
    fs::remove_file(&link).unwrap();
    fs::write(&link, NEVER).unwrap();
    within_2s("regular file applied", || {
        f.emulate() == EmulateTools::Never
    })
    .await;
    assert_eq!(f.store.status().last_error, None);
}

#[tokio::test]
async fn a_fifo_format_schema_file_is_refused_and_later_edits_apply() {
    let f = Fixture::start(&[("10-a.yaml", SCHEMA)]).await;
    let schema = || f.store.snapshot().model("m").format.clone().unwrap().schema;
    assert_eq!(schema()["type"], "object");
    let fifo = f.schemas.path().join("answer.json");
    fs::remove_file(&fifo).unwrap();
    mkfifo(&fifo);
    let _unblock = Unblock(vec![fifo.clone()]);
    let error = f.rejection().await;
    assert!(error.contains("answer.json"), "{error}");
    assert!(error.contains("named pipe (FIFO)"), "{error}");
    assert_eq!(schema()["type"], "object");
    fs::remove_file(&fifo).unwrap();
    fs::write(&fifo, r#"{"type":"array"}"#).unwrap();
    within_2s("schema edit applied", || schema()["type"] == "array").await;
    assert_eq!(f.store.status().last_error, None);
}

#[test]
fn a_fifo_policy_file_is_refused_at_start() {
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    let fifo = policies.path().join("10-pipe.yaml");
    mkfifo(&fifo);
    let _unblock = Unblock(vec![fifo.clone()]);
    // On a thread, so that a load that blocks fails the test.
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, s) = (policies.path().to_owned(), schemas.path().to_owned());
    std::thread::spawn(move || {
        let opened = PolicyStore::open(&p, &s).map(|_| ());
        let loaded = augur::policy::load_dir(&p, &s).map(|_| ());
        let _ = tx.send((opened, loaded));
    });
    let (opened, loaded) = rx
        .recv_timeout(Duration::from_secs(2))
        .unwrap_or_else(|_| panic!("loading blocked on the FIFO"));
    let e = opened.unwrap_err();
    assert!(e.to_string().contains("10-pipe.yaml"), "{e}");
    let e = loaded.unwrap_err();
    assert!(e.to_string().contains("named pipe (FIFO)"), "{e}");
}
