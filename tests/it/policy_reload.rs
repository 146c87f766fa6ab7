//! Hot reload through the library API: the watcher picks up edits (plain
//! writes, write-to-temp-and-rename, Kubernetes `..data` symlink swaps,
//! SIGHUP), broken edits are rejected whole, losing the files or the
//! directory is rejected like a broken edit, an unchanged set is never
//! parsed again, and a request's snapshot never changes under it.

// Test helpers outside `#[test]` fns: a failed setup should panic.
#![allow(clippy::unwrap_used)]

use std::{
    fs,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use augur::policy::{AuditLog, AuditPolicy, EmulateTools, PolicyStore};
use tokio::sync::watch;

/// Held by tests that count compiles, and by the SIGHUP test: the signal
/// reaches every watcher in this process and forces a compile in each
/// (the watchers of other modules too: they reload the same files, which
/// changes nothing they check; only the compile counts here would see it).
static SIGNALS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Replace `name` in `dir` whole (temp file, then rename), so no read sees
/// half of it.
fn replace(dir: &Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, dir.join(name)).unwrap();
}

const ALWAYS: &str = "defaults: {emulate_tools: always}\n";
const NEVER: &str = "defaults: {emulate_tools: never}\n";

struct Fixture {
    policies: tempfile::TempDir,
    schemas: tempfile::TempDir,
    store: Arc<PolicyStore>,
    _stop: watch::Sender<bool>,
}

impl Fixture {
    /// A store over `files`, with the watcher running.
    async fn start(files: &[(&str, &str)]) -> Self {
        let policies = tempfile::tempdir().unwrap();
        let schemas = tempfile::tempdir().unwrap();
        fs::write(schemas.path().join("answer.json"), r#"{"type":"object"}"#).unwrap();
        for (name, text) in files {
            fs::write(policies.path().join(name), text).unwrap();
        }
        Self::watch(policies, schemas).await
    }

    /// Start the watcher and let it settle, so edits below are seen as
    /// changes rather than by its first pass.
    async fn watch(policies: tempfile::TempDir, schemas: tempfile::TempDir) -> Self {
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
async fn a_plain_write_applies_within_2s() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    assert_eq!(f.emulate(), EmulateTools::Always);
    let v1 = f.store.status().version;
    fs::write(f.dir().join("10-a.yaml"), NEVER).unwrap();
    within_2s("write", || f.emulate() == EmulateTools::Never).await;
    let status = f.store.status();
    assert_ne!(status.version, v1);
    assert_eq!(status.last_error, None);
}

#[tokio::test]
async fn new_and_removed_files_apply_within_2s() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    fs::write(f.dir().join("20-b.yml"), NEVER).unwrap();
    within_2s("new file", || f.emulate() == EmulateTools::Never).await;
    fs::remove_file(f.dir().join("20-b.yml")).unwrap();
    within_2s("removed file", || f.emulate() == EmulateTools::Always).await;
    assert_eq!(f.store.status().files.len(), 1);
}

#[tokio::test]
async fn removing_the_last_file_keeps_the_policy_until_an_empty_file_says_so() {
    let f = Fixture::start(&[]).await;
    assert_eq!(f.store.status().version, "empty");
    fs::write(f.dir().join("20-b.yml"), NEVER).unwrap();
    within_2s("new file", || f.emulate() == EmulateTools::Never).await;
    let good = f.store.status().version;
    fs::remove_file(f.dir().join("20-b.yml")).unwrap();
    within_2s("rejection shown", || f.store.status().last_error.is_some()).await;
    let status = f.store.status();
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("no policy files left"),
        "{status:?}"
    );
    assert_eq!(status.version, good);
    assert_eq!(f.emulate(), EmulateTools::Never);
    // A file with no settings is an empty policy on purpose.
    fs::write(f.dir().join("00-empty.yaml"), "# no policy\n").unwrap();
    within_2s("explicit empty", || f.emulate() == EmulateTools::Auto).await;
    let status = f.store.status();
    assert_eq!(status.last_error, None);
    assert_eq!(status.files.len(), 1);
}

#[tokio::test]
async fn deleting_the_directory_keeps_auth_on() {
    let f = Fixture::start(&[("10-auth.yaml", "auth: {required: true}\n")]).await;
    assert!(f.store.snapshot().auth.required);
    let good = f.store.status().version;
    fs::remove_dir_all(f.dir()).unwrap();
    within_2s("rejection shown", || f.store.status().last_error.is_some()).await;
    let shown = f.store.status_json();
    let error = shown["last_error"].as_str().unwrap();
    assert!(error.contains("does not exist"), "{error}");
    assert_eq!(shown["version"], good.as_str());
    assert_eq!(shown["effective"]["auth"]["required"], true);
    assert!(f.store.snapshot().auth.required);
    // Back with a policy: applied.
    fs::create_dir(f.dir()).unwrap();
    fs::write(f.dir().join("10-auth.yaml"), "auth: {required: false}\n").unwrap();
    within_2s("directory back", || !f.store.snapshot().auth.required).await;
    assert_eq!(f.store.status().last_error, None);
}

#[tokio::test]
async fn an_unchanged_set_is_never_parsed_again() {
    let _alone = SIGNALS.lock().await;
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let compiles = f.store.compiles();
    // Polls and the store's own reads find nothing new.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(f.store.compiles(), compiles);
    // A broken edit is parsed once, however long it stays.
    let compiles_before_edit = f.store.compiles();
    replace(f.dir(), "10-a.yaml", "defaults: [\n");
    within_2s("rejection shown", || f.store.status().last_error.is_some()).await;
    let compiles = f.store.compiles();
    assert_eq!(compiles, compiles_before_edit + 1);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(f.store.compiles(), compiles);
    // Touching it (new timestamps, same content) reads but does not parse.
    let file = fs::File::options()
        .append(true)
        .open(f.dir().join("10-a.yaml"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now()).unwrap();
    f.store.reload_if_changed().unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(f.store.compiles(), compiles);
    assert_eq!(f.emulate(), EmulateTools::Always);
    // SIGHUP and reload_now parse on demand.
    f.store.reload_now().unwrap_err();
    assert_eq!(f.store.compiles(), compiles + 1);
}

#[tokio::test]
async fn an_oversized_or_deep_edit_is_refused_at_once_and_later_edits_apply() {
    let _alone = SIGNALS.lock().await;
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let compiles = f.store.compiles();
    let big = format!("# {}\n", "x".repeat(2 << 20));
    let deep = format!("defaults: {}\n", "[".repeat(200_000));
    for (text, expect) in [(big, "bytes per policy file"), (deep, "nested deeper")] {
        replace(f.dir(), "20-bad.yaml", &text);
        within_2s("refusal shown", || {
            f.store
                .status()
                .last_error
                .is_some_and(|e| e.contains("20-bad.yaml") && e.contains(expect))
        })
        .await;
        assert_eq!(f.emulate(), EmulateTools::Always);
        fs::remove_file(f.dir().join("20-bad.yaml")).unwrap();
        replace(f.dir(), "10-a.yaml", NEVER);
        within_2s("later edit", || f.emulate() == EmulateTools::Never).await;
        replace(f.dir(), "10-a.yaml", ALWAYS);
        within_2s("and back", || f.emulate() == EmulateTools::Always).await;
    }
    // The oversized file was refused from its size alone, the deep one by
    // the nesting check inside the compile, and undoing them needed no
    // compile: the four edits and the deep file were all.
    assert_eq!(f.store.compiles(), compiles + 5);
}

#[tokio::test]
async fn write_to_temp_and_rename_applies_within_2s() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    // As editors save: a hidden temp file, then an atomic rename over the old one.
    let tmp = f.dir().join(".10-a.yaml.swp");
    fs::write(&tmp, NEVER).unwrap();
    fs::rename(&tmp, f.dir().join("10-a.yaml")).unwrap();
    within_2s("rename", || f.emulate() == EmulateTools::Never).await;
    // And again, to show the watch survived the replaced file.
    fs::write(&tmp, ALWAYS).unwrap();
    fs::rename(&tmp, f.dir().join("10-a.yaml")).unwrap();
    within_2s("second rename", || f.emulate() == EmulateTools::Always).await;
}

#[cfg(unix)]
#[tokio::test]
async fn kubernetes_configmap_symlink_swap_applies_within_2s() {
    use std::os::unix::fs::symlink;
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    let d = policies.path().to_path_buf();
    // The layout kubelet creates for a mounted ConfigMap.
    fs::create_dir(d.join("..2026_01")).unwrap();
    fs::write(d.join("..2026_01/x.yaml"), ALWAYS).unwrap();
    symlink("..2026_01", d.join("..data")).unwrap();
    symlink("..data/x.yaml", d.join("x.yaml")).unwrap();
    let f = Fixture::watch(policies, schemas).await;
    assert_eq!(f.emulate(), EmulateTools::Always);
    assert_eq!(
        f.store.status().files.len(),
        1,
        "hidden entries are skipped"
    );

    // Update: new timestamped dir, new symlink, atomic rename over ..data.
    fs::create_dir(d.join("..2026_02")).unwrap();
    fs::write(d.join("..2026_02/x.yaml"), NEVER).unwrap();
    symlink("..2026_02", d.join("..data_tmp")).unwrap();
    fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
    fs::remove_dir_all(d.join("..2026_01")).unwrap();
    within_2s("..data swap", || f.emulate() == EmulateTools::Never).await;
}

#[tokio::test]
async fn broken_edits_are_rejected_and_the_last_good_policy_stays() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let good = f.store.status().version;
    let broken = [
        ("defaults: {emulate_tools: [\n", "invalid YAML"),
        ("defaults: {emulate_tools: maybe}\n", "emulate_tools"),
        (
            "models: {\"gemma3:[\": {emulate_tools: never}}\n",
            "invalid glob",
        ),
        (
            "defaults: {format: {schema: missing.json}}\n",
            "format.schema",
        ),
        (
            "auth: {keys: [{id: ci, key_env: AUGUR_TEST_UNSET_VARIABLE_9c1d}]}\n",
            "is not set",
        ),
    ];
    for (text, expect) in broken {
        fs::write(f.dir().join("10-a.yaml"), text).unwrap();
        let err = f.store.reload_now().unwrap_err().to_string();
        assert!(err.contains("10-a.yaml") && err.contains(expect), "{err}");
        let status = f.store.status();
        assert_eq!(status.version, good, "{text}");
        assert_eq!(f.emulate(), EmulateTools::Always);
        let shown = f.store.status_json();
        assert!(shown["last_error"].as_str().unwrap().contains(expect));
        assert_eq!(shown["version"], good.as_str());
    }
    // The watcher reports a broken edit on its own, too.
    fs::write(
        f.dir().join("10-a.yaml"),
        "defaults: {think_emulation: 3}\n",
    )
    .unwrap();
    within_2s("rejection shown", || {
        f.store
            .status()
            .last_error
            .is_some_and(|e| e.contains("think_emulation"))
    })
    .await;
    // A fixed file clears the error.
    fs::write(f.dir().join("10-a.yaml"), NEVER).unwrap();
    within_2s("fix", || f.emulate() == EmulateTools::Never).await;
    let shown = f.store.status_json();
    assert!(shown["last_error"].is_null());
    assert_eq!(shown["files"].as_array().unwrap().len(), 1);
    let loaded_at = shown["loaded_at"].as_str().unwrap();
    // RFC 3339, e.g. 2026-01-01T12:00:00.123Z
    let b = loaded_at.as_bytes();
    assert!(
        b.len() >= 20 && b[4] == b'-' && b[10] == b'T' && loaded_at.ends_with('Z'),
        "{loaded_at}"
    );
}

#[tokio::test]
async fn startup_refuses_a_broken_set() {
    let p = tempfile::tempdir().unwrap();
    fs::write(p.path().join("a.yaml"), "defaults: [").unwrap();
    let err = PolicyStore::open(p.path(), p.path()).unwrap_err();
    assert!(err.to_string().contains("a.yaml: invalid YAML"), "{err}");
    assert!(err.file().ends_with("a.yaml"));
}

#[tokio::test]
async fn an_in_flight_snapshot_is_unchanged_by_a_reload() {
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let in_flight = f.store.snapshot();
    fs::write(f.dir().join("10-a.yaml"), NEVER).unwrap();
    f.store.reload_now().unwrap();
    assert_eq!(
        in_flight.model("gemma3").emulate_tools,
        EmulateTools::Always
    );
    assert_eq!(f.emulate(), EmulateTools::Never);
    assert_ne!(in_flight.meta.version, f.store.snapshot().meta.version);
}

#[tokio::test]
async fn changed_format_schema_file_is_picked_up() {
    let f = Fixture::start(&[("10-a.yaml", "defaults: {format: {schema: answer.json}}\n")]).await;
    let schema = || f.store.snapshot().model("m").format.clone().unwrap().schema;
    assert_eq!(schema()["type"], "object");
    fs::write(f.schemas.path().join("answer.json"), r#"{"type":"array"}"#).unwrap();
    within_2s("schema edit", || schema()["type"] == "array").await;
}

#[cfg(unix)]
#[tokio::test]
async fn sighup_forces_a_reload() {
    let _alone = SIGNALS.lock().await;
    let f = Fixture::start(&[("10-a.yaml", ALWAYS)]).await;
    let before = f.store.status().loaded_at;
    let pid = std::process::id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    within_2s("SIGHUP", || f.store.status().loaded_at != before).await;
}

#[tokio::test]
async fn audit_log_writes_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::spawn();
    let mut policy = AuditPolicy {
        path: Some(path.display().to_string()),
        include_arguments: false,
    };
    let args = serde_json::json!({"city": "Oslo"});
    log.record(
        &policy,
        "ci",
        "gemma3:latest",
        "get_weather",
        "ok",
        Some(&args),
    );
    policy.include_arguments = true;
    log.record(
        &policy,
        "ci",
        "gemma3:latest",
        "get_weather",
        "invalid",
        Some(&args),
    );
    log.record(&AuditPolicy::default(), "ci", "m", "t", "ok", None);
    log.flush().await;
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["principal"], "ci");
    assert_eq!(lines[0]["tool"], "get_weather");
    assert!(lines[0].get("arguments").is_none());
    assert_eq!(lines[1]["arguments"]["city"], "Oslo");
    assert_eq!(lines[1]["outcome"], "invalid");
    assert!(lines[1]["time"].as_str().unwrap().contains('T'));
}
