//! Policy files that used to exhaust augur: a huge valid file, thousands of
//! files, YAML nested 100,000 deep. Each is refused in milliseconds with an
//! error naming the file and the bound, idle CPU stays near zero whatever
//! sits in the directory, and later edits still apply.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::common::{
    augur_bin, client,
    process::{Process, Start, measure},
};

/// Most CPU augur may use while idle over [`IDLE`] (the 1 s poll included).
const IDLE_CPU: Duration = Duration::from_millis(150);
const IDLE: Duration = Duration::from_secs(5);

const UPSTREAM: &str = "http://127.0.0.1:9";

async fn status(p: &Process) -> Value {
    client()
        .get(format!("{}/-/policies", p.admin))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Poll `/-/policies` until `cond` holds (at most `secs`).
async fn until(p: &Process, secs: u64, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let s = status(p).await;
        if cond(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "not within {secs} s: {what}: {s}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// CPU used over [`IDLE`] with nothing happening.
async fn idle_cpu(p: &Process) -> Duration {
    let ((), cost) = measure(p, tokio::time::sleep(IDLE)).await;
    cost.cpu
}

/// Replace `name` whole (temp file, then rename), as editors do.
fn replace(dir: &Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn models(n: usize) -> String {
    let mut s = String::from("models:\n");
    for i in 0..n {
        s.push_str(&format!(
            "  \"m{i:06}:*\": {{emulate_tools: always, validate: {{max_retries: 2}}}}\n"
        ));
    }
    s
}

async fn start(policies: &Path) -> Process {
    Process::start(Start {
        upstream: UPSTREAM,
        policies: Some(policies),
        ..Start::default()
    })
    .await
}

#[tokio::test]
async fn idle_cpu_is_near_zero_after_a_big_valid_set() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("10-models.yaml"), models(2_000)).unwrap();
    let filler = format!("# {}\n", "filler ".repeat(140_000));
    std::fs::write(dir.path().join("20-comments.yaml"), filler).unwrap();
    let p = start(dir.path()).await;
    let s = status(&p).await;
    assert_eq!(s["files"].as_array().unwrap().len(), 2, "{s}");
    assert_eq!(s["effective"]["models"].as_array().unwrap().len(), 2_000);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cpu = idle_cpu(&p).await;
    eprintln!(
        "big valid set: idle CPU {cpu:?} over {IDLE:?}, RSS {} KiB",
        p.rss() / 1024
    );
    assert!(cpu < IDLE_CPU, "idle CPU {cpu:?}");
}

#[tokio::test]
async fn ten_thousand_files_are_refused_at_once_and_cost_nothing_idle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("10-a.yaml"), "auth: {required: true}\n").unwrap();
    let p = start(dir.path()).await;
    let ((), cost) = measure(&p, async {
        for i in 0..10_000 {
            let text = format!("models: {{\"x{i}\": {{emulate_tools: never}}}}\n");
            std::fs::write(dir.path().join(format!("{i:05}.yaml")), text).unwrap();
        }
        until(&p, 5, "refusal shown", |s| {
            s["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("256 policy files"))
        })
        .await;
    })
    .await;
    eprintln!("10,000 files: refusal cost {:?} CPU", cost.cpu);
    let s = status(&p).await;
    assert_eq!(s["effective"]["auth"]["required"], true, "{s}");
    // A reload may have run while the files were still being written and
    // loaded the first ones (a valid directory then); never past the bound.
    let loaded = s["files"].as_array().unwrap().len();
    assert!((1..=256).contains(&loaded), "{loaded} files loaded");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cpu = idle_cpu(&p).await;
    eprintln!("10,000 files: idle CPU {cpu:?} over {IDLE:?}");
    assert!(cpu < IDLE_CPU, "idle CPU {cpu:?}");

    // At start the same directory is refused with the bound named.
    let started = Instant::now();
    let out = augur_bin()
        .arg("--check-config")
        .arg("--policies")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("256 policy files"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_50_mb_file_is_refused_in_milliseconds_and_later_edits_apply() {
    let dir = tempfile::tempdir().unwrap();
    replace(
        dir.path(),
        "10-a.yaml",
        "defaults: {emulate_tools: always}\n",
    );
    let p = start(dir.path()).await;
    let big = models(760_000);
    assert!(big.len() > 50_000_000);
    let ((), cost) = measure(&p, async {
        replace(dir.path(), "20-big.yaml", &big);
        until(&p, 5, "refusal shown", |s| {
            s["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("20-big.yaml") && e.contains("1048576"))
        })
        .await;
    })
    .await;
    eprintln!(
        "50 MB file: refusal cost {:?} CPU, RSS growth {} KiB",
        cost.cpu,
        cost.rss_growth / 1024
    );
    assert!(cost.cpu < Duration::from_millis(500), "{:?}", cost.cpu);
    assert!(cost.rss_growth < 20 << 20, "{} bytes", cost.rss_growth);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cpu = idle_cpu(&p).await;
    eprintln!("50 MB file: idle CPU {cpu:?} over {IDLE:?}");
    assert!(cpu < IDLE_CPU, "idle CPU {cpu:?}");

    // Fixing the set applies within 2 s.
    std::fs::remove_file(dir.path().join("20-big.yaml")).unwrap();
    replace(
        dir.path(),
        "10-a.yaml",
        "defaults: {emulate_tools: never}\n",
    );
    until(&p, 2, "later edit", |s| {
        s["effective"]["defaults"]["emulate_tools"] == "never" && s["last_error"].is_null()
    })
    .await;
}

#[tokio::test]
async fn yaml_nested_100k_deep_is_refused_at_once_and_later_edits_apply() {
    let dir = tempfile::tempdir().unwrap();
    replace(
        dir.path(),
        "10-a.yaml",
        "defaults: {emulate_tools: always}\n",
    );
    let p = start(dir.path()).await;
    let deep = format!("defaults: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let ((), cost) = measure(&p, async {
        replace(dir.path(), "20-deep.yaml", &deep);
        until(&p, 5, "refusal shown", |s| {
            s["last_error"].as_str().is_some_and(|e| {
                e.contains("20-deep.yaml") && e.contains("nested deeper than 64 levels")
            })
        })
        .await;
    })
    .await;
    eprintln!("100k-deep YAML: refusal cost {:?} CPU", cost.cpu);
    assert!(cost.cpu < Duration::from_millis(500), "{:?}", cost.cpu);
    // An edit right after applies within 2 s, the deep file still there.
    replace(dir.path(), "20-deep.yaml", "{}\n");
    replace(
        dir.path(),
        "10-a.yaml",
        "defaults: {emulate_tools: never}\n",
    );
    until(&p, 2, "later edit", |s| {
        s["effective"]["defaults"]["emulate_tools"] == "never" && s["last_error"].is_null()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cpu = idle_cpu(&p).await;
    assert!(cpu < IDLE_CPU, "idle CPU {cpu:?}");
}
