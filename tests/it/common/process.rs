//! The `augur` binary as a child process, and what it costs: resident
//! memory and CPU time read from `/proc`, so resource bounds are checked on
//! the real process rather than on a test's own threads.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use super::{augur_bin, client};

/// A running `augur` binary; killed when dropped.
pub struct Process {
    pub child: tokio::process::Child,
    /// Base URL of the proxy listener.
    pub url: String,
    /// Base URL of the admin listener.
    pub admin: String,
    pub pid: u32,
    /// The empty policy/schema directory and the config file, kept for as
    /// long as the process runs (it watches the policy directory).
    _files: (tempfile::TempDir, Option<tempfile::NamedTempFile>),
}

/// Options for [`Process::start`].
#[derive(Default)]
pub struct Start<'a> {
    pub upstream: &'a str,
    pub policies: Option<&'a Path>,
    pub schemas: Option<&'a Path>,
    /// A config file (TOML), written to a temporary file.
    pub config: Option<&'a str>,
    pub env: Vec<(&'a str, &'a str)>,
    /// Where stderr (the log) goes; discarded when `None`.
    pub log: Option<&'a Path>,
}

impl Process {
    /// Start augur and wait until its admin listener answers (at most 60 s:
    /// a large policy set takes a debug build a while to load on a busy
    /// machine; what tests bound is CPU and memory, not time).
    pub async fn start(opts: Start<'_>) -> Process {
        let (port, admin_port) = two_free_ports();
        let mut cmd = tokio::process::Command::from(augur_bin());
        cmd.args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--admin-listen", &format!("127.0.0.1:{admin_port}")])
            .args(["--upstream", opts.upstream])
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true);
        let empty = tempfile::tempdir().unwrap();
        cmd.arg("--policies")
            .arg(opts.policies.unwrap_or(empty.path()));
        cmd.arg("--schemas")
            .arg(opts.schemas.unwrap_or(empty.path()));
        let config_file = opts.config.map(|text| {
            let f = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(f.path(), text).unwrap();
            f
        });
        if let Some(f) = &config_file {
            cmd.arg("--config").arg(f.path());
        }
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        match opts.log {
            Some(path) => cmd.stderr(std::fs::File::create(path).unwrap()),
            None => cmd.stderr(std::process::Stdio::null()),
        };
        let child = cmd.spawn().unwrap();
        let pid = child.id().unwrap();
        let admin = format!("http://127.0.0.1:{admin_port}");
        let c = client();
        let up = Instant::now();
        loop {
            if let Ok(r) = c.get(format!("{admin}/-/healthy")).send().await
                && r.status() == 200
            {
                break;
            }
            assert!(
                up.elapsed() < Duration::from_secs(60),
                "augur did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Process {
            child,
            url: format!("http://127.0.0.1:{port}"),
            admin,
            pid,
            _files: (empty, config_file),
        }
    }

    /// Resident set size in bytes (`VmRSS`).
    pub fn rss(&self) -> u64 {
        self.status_kb("VmRSS:") * 1024
    }

    /// The largest resident set size so far, in bytes (`VmHWM`).
    pub fn peak_rss(&self) -> u64 {
        self.status_kb("VmHWM:") * 1024
    }

    fn status_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    /// User plus system CPU time used so far.
    pub fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap();
        // Fields after the command name, which is in parentheses and may
        // hold spaces: state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_millis(ticks * 1000 / clock_ticks())
    }

    /// Open file descriptors.
    pub fn open_files(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .unwrap()
            .count()
    }
}

/// The access log lines (`augur::access`) of a JSON log written to
/// `path` (`[log] format = "json"`): each line's fields.
pub fn access_log(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["target"] == "augur::access")
        .map(|l| l["fields"].clone())
        .collect()
}

/// The access log line of request `id`, once written (at most 10 s).
pub async fn access_line(path: &Path, id: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(line) = access_log(path).into_iter().find(|l| l["request_id"] == id) {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no access log line for {id}:\n{}",
            std::fs::read_to_string(path).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two distinct ports free at the time of asking (both held while asking,
/// so they cannot be the same one).
fn two_free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// Clock ticks per second of `/proc/<pid>/stat` times.
fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// What a piece of work cost the process: CPU time and RSS growth.
pub struct Cost {
    pub cpu: Duration,
    pub rss_growth: i64,
}

/// Run `work` and measure what it cost `process`.
pub async fn measure<T>(
    process: &Process,
    work: impl std::future::Future<Output = T>,
) -> (T, Cost) {
    let (cpu0, rss0) = (process.cpu(), process.rss());
    let out = work.await;
    let cost = Cost {
        cpu: process.cpu().saturating_sub(cpu0),
        rss_growth: process.rss() as i64 - rss0 as i64,
    };
    (out, cost)
}
