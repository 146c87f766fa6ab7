//! The scripts against a real `redis-server` (started per test on a free
//! port, in a temporary directory, without persistence): refill, burst,
//! all-or-nothing over several keys, reservations and refunds, new numbers
//! on old state, expiry, lost scripts, and a server that goes away and
//! comes back. These tests fail, rather than skip, without `redis-server`
//! on the PATH: CI installs it.

use std::{process::Stdio, sync::atomic::Ordering, time::Duration};

use redis::AsyncCommands;

use super::keys::BucketSpec;
use super::scripts::Verdict;
use super::state::{StoreError, TIMEOUTS_BEFORE_RECONNECT, lock};
use super::store::SharedStore;
use crate::limits::error::Scope;

/// A `redis-server` child, killed on drop.
pub(crate) struct Server {
    child: Option<tokio::process::Child>,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Server {
    pub(crate) async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Self::on(port).await
    }

    pub(crate) async fn on(port: u16) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let child = tokio::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            // `DEBUG SLEEP` stalls the server for the stall tests.
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        let server = Self {
            child: Some(child),
            port,
            _dir: dir,
        };
        let client = redis::Client::open(server.url()).unwrap();
        for _ in 0..200 {
            if let Ok(mut c) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING")
                    .query_async::<String>(&mut c)
                    .await
                    .is_ok()
            {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("redis-server did not start on port {port}");
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    async fn conn(&self) -> redis::aio::MultiplexedConnection {
        let client = redis::Client::open(self.url()).unwrap();
        client.get_multiplexed_async_connection().await.unwrap()
    }

    pub(crate) async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
            let _ = c.wait().await;
        }
    }
}

async fn store(server: &Server) -> SharedStore {
    let s = SharedStore::new(&server.url(), "t", Duration::from_millis(250)).unwrap();
    s.start(Duration::from_secs(5)).await;
    assert!(s.is_up());
    s
}

fn rate(key: &str, per_minute: u32, burst: u32) -> BucketSpec {
    BucketSpec::rate(key.into(), Scope::Principal, per_minute, burst)
}

fn tokens(key: &str, per_minute: u64) -> BucketSpec {
    BucketSpec::Tokens {
        key: key.into(),
        per_minute,
    }
}

fn admitted(v: Verdict) -> Vec<i64> {
    match v {
        Verdict::Admitted(values) => values,
        Verdict::Refused { index, wait } => panic!("refused by {index} for {wait:?}"),
        Verdict::Late => panic!("late"),
    }
}

fn refused(v: Verdict) -> (usize, Duration) {
    match v {
        Verdict::Refused { index, wait } => (index, wait),
        Verdict::Admitted(values) => panic!("admitted: {values:?}"),
        Verdict::Late => panic!("late"),
    }
}

#[tokio::test]
async fn burst_then_refill_at_the_rate() {
    let server = Server::start().await;
    let s = store(&server).await;
    // 600 a minute (one per 100 ms), 3 at once.
    let b = [rate("t:{a}:rate", 600, 3)];
    for remaining in [2, 1, 0] {
        assert_eq!(admitted(s.admit(&b, 0).await.unwrap()), [remaining]);
    }
    let (index, wait) = refused(s.admit(&b, 0).await.unwrap());
    assert_eq!(index, 0);
    assert!(
        wait > Duration::from_millis(50) && wait <= Duration::from_millis(100),
        "{wait:?}"
    );
    tokio::time::sleep(wait + Duration::from_millis(5)).await;
    assert_eq!(admitted(s.admit(&b, 0).await.unwrap()), [0]);
    // The key expires once the bucket would be full again (plus 1 s).
    let ttl: i64 = server.conn().await.pttl("t:{a}:rate").await.unwrap();
    assert!((1000..=1400).contains(&ttl), "{ttl}");
}

#[tokio::test]
async fn a_refusal_consumes_nothing_and_reports_the_longest_wait() {
    let server = Server::start().await;
    let s = store(&server).await;
    let roomy = rate("t:{a}:rate", 60, 5);
    let tight = BucketSpec::rate("t:{a}:rate:m".into(), Scope::Model, 1, 1);
    assert_eq!(
        admitted(s.admit(std::slice::from_ref(&tight), 0).await.unwrap()),
        [0]
    );
    for _ in 0..3 {
        let (index, wait) = refused(s.admit(&[roomy.clone(), tight.clone()], 0).await.unwrap());
        assert_eq!(index, 1, "the model bucket refused");
        assert!(wait > Duration::from_secs(59), "{wait:?}");
    }
    // The roomy bucket was never touched by the refused calls.
    assert_eq!(
        admitted(s.admit(std::slice::from_ref(&roomy), 0).await.unwrap()),
        [4]
    );
    // Nor is a token bucket reserved from by a refused call.
    let budget = tokens("t:{a}:tokens", 600);
    let (index, _) = refused(
        s.admit(&[budget.clone(), tight.clone()], 100)
            .await
            .unwrap(),
    );
    assert_eq!(index, 1);
    let exists: bool = server.conn().await.exists("t:{a}:tokens").await.unwrap();
    assert!(!exists, "a refused admission wrote the token bucket");
}

#[tokio::test]
async fn tokens_reserve_charge_and_refund() {
    let server = Server::start().await;
    let s = store(&server).await;
    let key = "t:{a}:tokens";
    let b = [tokens(key, 600)];
    // Reserve 100 of 600, then the answer cost 40: 60 come back.
    assert_eq!(admitted(s.admit(&b, 100).await.unwrap()), [500]);
    let after = s.charge(&[(key.into(), 600)], 40 - 100).await.unwrap();
    assert!((560..=561).contains(&after[0]), "{after:?}");
    // A refund never lifts a bucket above full; a full bucket is deleted.
    let full = s.charge(&[(key.into(), 600)], -10_000).await.unwrap();
    assert_eq!(full, [600]);
    let exists: bool = server.conn().await.exists(key).await.unwrap();
    assert!(!exists);
    // Debt: 600 + 1200 charged takes it to -600; at 10 a second it is
    // positive again in a little over a minute.
    let debt = s.charge(&[(key.into(), 600)], 1200).await.unwrap();
    assert!((-600..=-599).contains(&debt[0]), "{debt:?}");
    let (_, wait) = refused(s.admit(&b, 0).await.unwrap());
    assert!((60..=61).contains(&wait.as_secs()), "{wait:?}");
    let ttl: i64 = server.conn().await.pttl(key).await.unwrap();
    assert!(
        (120_000..=122_000).contains(&ttl),
        "until full, plus 1 s: {ttl}"
    );
    // Refill: at 60000 a minute a 1000-token debt clears in about a second.
    let fast = [(String::from("t:{b}:tokens"), 60_000)];
    s.charge(&fast, 61_000).await.unwrap();
    let b = [tokens("t:{b}:tokens", 60_000)];
    refused(s.admit(&b, 0).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    admitted(s.admit(&b, 0).await.unwrap());
}

#[tokio::test]
async fn several_token_budgets_are_charged_together() {
    let server = Server::start().await;
    let s = store(&server).await;
    let both = [
        (String::from("t:{a}:tokens"), 1000),
        (String::from("t:{a}:tokens:m"), 100),
    ];
    let balances = s.charge(&both, 150).await.unwrap();
    assert!((850..=851).contains(&balances[0]), "{balances:?}");
    assert!((-50..=-49).contains(&balances[1]), "{balances:?}");
    let b = [tokens("t:{a}:tokens", 1000), tokens("t:{a}:tokens:m", 100)];
    let (index, _) = refused(s.admit(&b, 0).await.unwrap());
    assert_eq!(index, 1);
}

#[tokio::test]
async fn new_numbers_apply_to_the_existing_state() {
    let server = Server::start().await;
    let s = store(&server).await;
    for _ in 0..3 {
        admitted(s.admit(&[rate("t:{a}:rate", 60, 3)], 0).await.unwrap());
    }
    refused(s.admit(&[rate("t:{a}:rate", 60, 3)], 0).await.unwrap());
    // A reload raises the burst to 5: two more fit, not five.
    assert_eq!(
        admitted(s.admit(&[rate("t:{a}:rate", 60, 5)], 0).await.unwrap()),
        [1]
    );
    assert_eq!(
        admitted(s.admit(&[rate("t:{a}:rate", 60, 5)], 0).await.unwrap()),
        [0]
    );
    refused(s.admit(&[rate("t:{a}:rate", 60, 5)], 0).await.unwrap());
    // A token budget lowered below its balance is capped, not reset.
    let key = "t:{a}:tokens";
    s.charge(&[(key.into(), 1000)], 100).await.unwrap();
    assert_eq!(
        admitted(s.admit(&[tokens(key, 500)], 0).await.unwrap()),
        [500]
    );
}

#[tokio::test]
async fn lost_scripts_are_loaded_again() {
    let server = Server::start().await;
    let s = store(&server).await;
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async::<()>(&mut server.conn().await)
        .await
        .unwrap();
    assert_eq!(
        admitted(s.admit(&[rate("t:{a}:rate", 60, 2)], 0).await.unwrap()),
        [1]
    );
}

#[tokio::test]
async fn a_store_that_goes_away_fails_fast_and_is_reconnected() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let s = SharedStore::new(&url, "t", Duration::from_millis(250)).unwrap();
    s.start(Duration::from_millis(200)).await;
    assert!(!s.is_up());
    let b = [rate("t:{a}:rate", 60, 2)];
    let started = tokio::time::Instant::now();
    assert_eq!(s.admit(&b, 0).await, Err(StoreError::Unavailable));
    assert!(started.elapsed() < Duration::from_millis(50));
    assert!(s.health().error.is_some());

    let mut server = Server::on(port).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !s.is_up() {
        assert!(tokio::time::Instant::now() < deadline, "not reconnected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(admitted(s.admit(&b, 0).await.unwrap()), [1]);

    server.stop().await;
    let started = tokio::time::Instant::now();
    let err = s.admit(&b, 0).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(300), "{err}");
    let _server = Server::on(port).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !s.is_up() {
        assert!(tokio::time::Instant::now() < deadline, "not reconnected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A new server: the bucket starts full again.
    assert_eq!(admitted(s.admit(&b, 0).await.unwrap()), [1]);
    assert!(s.health().error.is_none());
}

/// Stall the server for `ms` milliseconds (from a connection of its own).
async fn stall(server: &Server, ms: u64) -> tokio::task::JoinHandle<()> {
    let mut conn = server.conn().await;
    let secs = format!("{}", ms as f64 / 1000.0);
    tokio::spawn(async move {
        let _: redis::RedisResult<String> = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(secs)
            .query_async(&mut conn)
            .await;
    })
}

/// A stalled store: the admission times out, and when the server resumes
/// the script, run past the caller's deadline, consumes nothing.
#[tokio::test]
async fn an_admission_given_up_consumes_nothing_when_the_store_resumes() {
    let server = Server::start().await;
    let s = SharedStore::new(&server.url(), "t", Duration::from_millis(30)).unwrap();
    s.start(Duration::from_secs(2)).await;
    let b = [rate("t:{late}:rate", 60, 2)];
    let stalled = stall(&server, 400).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.admit(&b, 0).await, Err(StoreError::Timeout));
    stalled.await.unwrap();
    let mut conn = server.conn().await;
    let tat: Option<String> = conn.get("t:{late}:rate").await.unwrap();
    assert_eq!(tat, None, "the late script wrote its bucket");
    // The connection is kept (one timeout), and the bucket is whole.
    assert!(s.is_up());
    assert_eq!(admitted(s.admit(&b, 0).await.unwrap()), [1]);
}

/// Timeouts count toward a lost connection only while no reply arrives:
/// one slow call among answered ones keeps the connection.
#[tokio::test]
async fn timeouts_drop_the_connection_only_when_nothing_answers() {
    let server = Server::start().await;
    let s = store(&server).await;
    let number = lock(&s.inner.conn).as_ref().unwrap().0;
    for _ in 0..5 {
        let seen = s.inner.replies.load(Ordering::Relaxed);
        // A reply to another call came in meanwhile.
        s.inner.replies.fetch_add(1, Ordering::Relaxed);
        s.timed_out(number, seen);
    }
    assert!(s.is_up(), "a slow reply among others is not an outage");
    for _ in 0..TIMEOUTS_BEFORE_RECONNECT {
        let seen = s.inner.replies.load(Ordering::Relaxed);
        s.timed_out(number, seen);
    }
    assert!(!s.is_up(), "nothing answered three calls in a row");
}
