//! Upstreams found by DNS: a `dns+http://` name behind which several fake
//! Ollamas listen (127.0.0.2, 127.0.0.3, ... on one port), looked up at a
//! DNS server the test runs and changes. Requests spread over the
//! members; members added and removed under a steady load of streams
//! lose no request; a removed member's stream finishes; a server that
//! stops answering keeps the members; a name with no address at start
//! waits for one; SRV records give the ports; a failing member has the
//! name looked up early.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use augur::config::UpstreamSpec;
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use crate::{
    common::{self, Augur, client, dns_server::DnsServer, metric, until},
    upstreams::augur_for,
};

const MODEL: &str = "llama3.2";

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// `n` fake Ollamas on 127.0.0.2, 127.0.0.3, ..., all on one port.
async fn fakes(n: u8, chunk_delay: Duration) -> Vec<FakeOllama> {
    'port: for _ in 0..20 {
        let mut started = Vec::new();
        let mut port = 0;
        for i in 0..n {
            let builder = FakeOllama::builder()
                .models(&[MODEL, "long-stream"])
                .chunk_delay(chunk_delay)
                .listen(SocketAddr::new(ip(2 + i), port));
            match builder.try_start().await {
                Ok(fake) => {
                    port = fake.addr().port();
                    started.push(fake);
                }
                Err(_) => continue 'port,
            }
        }
        return started;
    }
    panic!("no port free on every loopback address");
}

/// augur in front of `dns+http://NAME:PORT` named `name`, looked up at
/// `dns` every second; members found before it returns; lookups, health
/// probes and model reads running until it stops.
async fn augur_on(dns: &DnsServer, name: &str, host: &str, port: u16) -> Augur {
    let mut spec = UpstreamSpec::from_url(&format!("dns+http://{host}:{port}")).unwrap();
    spec.name = name.to_string();
    let d = spec.dns.as_mut().unwrap();
    d.interval = Duration::from_secs(1);
    d.max_members = 4;
    start(dns, spec).await
}

async fn start(dns: &DnsServer, spec: UpstreamSpec) -> Augur {
    let at = dns.addr;
    let augur = augur_for(vec![spec], |c| c.dns_server = Some(at)).await;
    let fleet = &augur.state.fleet;
    fleet.resolve_now().await;
    fleet.refresh(true).await;
    fleet
        .resolving(augur.stopping())
        .into_iter()
        .for_each(|t| drop(tokio::spawn(t)));
    fleet.monitoring(augur.stopping()).map(tokio::spawn);
    augur
}

/// The members `/-/upstreams` shows: name and whether draining.
fn members(augur: &Augur) -> Vec<(String, bool)> {
    let status = augur.state.fleet.status_json();
    status["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            assert_eq!(u["found_by_dns"], true);
            (
                u["name"].as_str().unwrap().to_string(),
                u["draining"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn member(name: &str, fake: &FakeOllama) -> String {
    format!("{name}/{}", fake.addr())
}

fn chat(stream: bool) -> Value {
    json!({"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

/// One streamed chat; `Err` unless it is a 200 whose stream ends done.
async fn stream_chat(augur: &Augur, pin: Option<&str>) -> Result<(), String> {
    send_chat(augur, pin, chat(true)).await
}

async fn send_chat(augur: &Augur, pin: Option<&str>, body: Value) -> Result<(), String> {
    let mut req = client().post(format!("{}/api/chat", augur.url)).json(&body);
    if let Some(name) = pin {
        req = req.header("x-augur-upstream", name);
    }
    let r = req.send().await.map_err(|e| e.to_string())?;
    let status = r.status();
    let text = r.text().await.map_err(|e| e.to_string())?;
    let last = common::ndjson(&text).pop().unwrap_or_default();
    if status != 200 || last["done"] != true || last.get("error").is_some() {
        return Err(format!("{status}: {text}"));
    }
    Ok(())
}

fn chats(f: &FakeOllama) -> u64 {
    f.requests("/api/chat")
}

fn resolutions(name: &str, result: &str) -> f64 {
    let text = common::metrics().render();
    let upstream = format!("upstream=\"{name}\"");
    let result = format!("result=\"{result}\"");
    metric(
        &text,
        "augur_upstream_dns_resolutions_total",
        &[&upstream, &result],
    )
}

#[tokio::test]
async fn requests_spread_over_the_addresses_a_name_resolves_to() {
    let dns = DnsServer::start().await;
    let f = fakes(3, Duration::from_millis(50)).await;
    dns.set_addresses("spread.test", &[ip(2), ip(3), ip(4)]);
    let augur = augur_on(&dns, "spread", "spread.test", f[0].addr().port()).await;
    let mut expected: Vec<(String, bool)> =
        f.iter().map(|x| (member("spread", x), false)).collect();
    expected.sort();
    assert_eq!(members(&augur), expected);
    assert!(resolutions("spread", "ok") >= 1.0);

    let streams: Vec<_> = (0..9).map(|_| stream_chat(&augur, None)).collect();
    for r in futures_util::future::join_all(streams).await {
        r.unwrap();
    }
    let each: Vec<u64> = f.iter().map(chats).collect();
    assert_eq!(each.iter().sum::<u64>(), 9);
    assert!(each.iter().all(|&n| n >= 1), "{each:?}");

    // A member is named by its address, as a configured upstream is.
    let before = chats(&f[1]);
    stream_chat(&augur, Some(&member("spread", &f[1])))
        .await
        .unwrap();
    assert_eq!(chats(&f[1]), before + 1);
    augur.stop().await;
}

#[tokio::test]
async fn members_come_and_go_under_load_and_no_request_fails() {
    let dns = DnsServer::start().await;
    // Streams of about a second each.
    let f = fakes(3, Duration::from_millis(100)).await;
    let (a, b, c) = (&f[0], &f[1], &f[2]);
    dns.set_addresses("churn.test", &[ip(2), ip(3)]);
    let augur = Arc::new(augur_on(&dns, "churn", "churn.test", a.addr().port()).await);
    assert_eq!(members(&augur).len(), 2);

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let load: Vec<_> = (0..6)
        .map(|_| {
            let (augur, stop, done) = (augur.clone(), stop.clone(), done.clone());
            tokio::spawn(async move {
                let mut failures = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    match stream_chat(&augur, None).await {
                        Ok(()) => {
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => failures.push(e),
                    }
                }
                failures
            })
        })
        .collect();
    assert!(until(Duration::from_secs(10), || chats(a) > 0 && chats(b) > 0).await);

    // A member is added: it takes its share.
    dns.set_addresses("churn.test", &[ip(2), ip(3), ip(4)]);
    assert!(
        until(Duration::from_secs(10), || chats(c) > 0).await,
        "the new member got no request"
    );

    // A member is removed while streams run on it: it drains, then leaves.
    assert!(
        until(Duration::from_secs(10), || a.streams_started()
            > a.streams_completed())
        .await
    );
    dns.set_addresses("churn.test", &[ip(3), ip(4)]);
    let gone = member("churn", a);
    assert!(
        until(Duration::from_secs(10), || members(&augur)
            .iter()
            .all(|(n, _)| n != &gone))
        .await,
        "the removed member never left: {:?}",
        members(&augur)
    );
    let after_removal = chats(a);
    let before = done.load(Ordering::SeqCst);
    assert!(
        until(Duration::from_secs(10), || done.load(Ordering::SeqCst)
            >= before + 12)
        .await
    );
    stop.store(true, Ordering::SeqCst);
    for task in load {
        let failures = task.await.unwrap();
        assert!(failures.is_empty(), "{failures:?}");
    }
    // Its streams finished; it got nothing new once gone.
    assert_eq!(a.streams_started(), a.streams_completed());
    assert_eq!((a.streams_aborted(), a.streams_cut()), (0, 0));
    assert_eq!(chats(a), after_removal);
    assert!(chats(b) > 0 && chats(c) > 0);
}

#[tokio::test]
async fn a_removed_members_stream_finishes_before_it_leaves() {
    let dns = DnsServer::start().await;
    let f = fakes(2, Duration::ZERO).await;
    dns.set_addresses("drain.test", &[ip(2), ip(3)]);
    let augur = Arc::new(augur_on(&dns, "drain", "drain.test", f[0].addr().port()).await);
    let name = member("drain", &f[0]);
    let stream = {
        let (augur, name) = (augur.clone(), name.clone());
        // Five seconds: past a few lookups.
        let long = json!({"model": "long-stream", "stream": true,
            "options": {"num_predict": 50, "interval_ms": 100},
            "messages": [{"role": "user", "content": "hi"}]});
        tokio::spawn(async move { send_chat(&augur, Some(&name), long).await })
    };
    assert!(until(Duration::from_secs(5), || f[0].streams_started() == 1).await);
    dns.set_addresses("drain.test", &[ip(3)]);
    assert!(
        until(Duration::from_secs(5), || members(&augur)
            .contains(&(name.clone(), true)))
        .await,
        "{:?}",
        members(&augur)
    );
    // Draining: new requests go elsewhere, and cannot name it.
    stream_chat(&augur, None).await.unwrap();
    assert_eq!(chats(&f[1]), 1);
    let pinned = client()
        .post(format!("{}/api/chat", augur.url))
        .header("x-augur-upstream", &name)
        .json(&chat(false))
        .send()
        .await
        .unwrap();
    assert_eq!(pinned.status(), 400);
    // A later lookup: the member still drains while its stream runs.
    let lookups = resolutions("drain", "ok");
    assert!(
        until(Duration::from_secs(5), || resolutions("drain", "ok")
            > lookups)
        .await
    );
    assert!(members(&augur).contains(&(name.clone(), true)));
    assert_eq!(
        f[0].streams_completed(),
        0,
        "the stream ended too soon to test"
    );
    stream.await.unwrap().unwrap();
    assert!(
        until(Duration::from_secs(5), || members(&augur).len() == 1).await,
        "{:?}",
        members(&augur)
    );
    assert_eq!(f[0].streams_completed(), 1);
}

#[tokio::test]
async fn a_dns_server_that_stops_answering_keeps_the_members() {
    let dns = DnsServer::start().await;
    let f = fakes(2, Duration::ZERO).await;
    dns.set_addresses("silent.test", &[ip(2), ip(3)]);
    let augur = augur_on(&dns, "silent", "silent.test", f[0].addr().port()).await;
    let before = members(&augur);
    assert_eq!(before.len(), 2);
    dns.set_silent(true);
    assert!(
        until(Duration::from_secs(15), || resolutions("silent", "timeout")
            + resolutions("silent", "error")
            >= 1.0)
        .await
    );
    assert_eq!(members(&augur), before);
    for _ in 0..4 {
        stream_chat(&augur, None).await.unwrap();
    }
    // Answering again: nothing changed, nothing moves.
    dns.set_silent(false);
    let ok = resolutions("silent", "ok");
    assert!(until(Duration::from_secs(10), || resolutions("silent", "ok") > ok).await);
    assert_eq!(members(&augur), before);
    augur.stop().await;
}

#[tokio::test]
async fn a_name_without_addresses_at_start_waits_for_one() {
    let dns = DnsServer::start().await;
    let f = fakes(1, Duration::ZERO).await;
    let augur = augur_on(&dns, "later", "later.test", f[0].addr().port()).await;
    assert!(members(&augur).is_empty());
    assert!(resolutions("later", "error") >= 1.0);
    // Serving, but nothing can take the request; not ready.
    let r = client()
        .post(format!("{}/api/chat", augur.url))
        .json(&chat(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502, "{:?}", r.text().await);
    let admin = augur.admin().await;
    let ready = client()
        .get(format!("{admin}/-/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    assert!(ready.text().await.unwrap().contains("no upstream member"));

    dns.set_addresses("later.test", &[ip(2)]);
    assert!(until(Duration::from_secs(10), || members(&augur).len() == 1).await);
    stream_chat(&augur, None).await.unwrap();
    assert_eq!(chats(&f[0]), 1);
    augur.stop().await;
}

#[tokio::test]
async fn srv_records_give_each_member_its_port() {
    let dns = DnsServer::start().await;
    let one = FakeOllama::builder().models(&[MODEL]).start().await;
    let two = FakeOllama::builder().models(&[MODEL]).start().await;
    dns.set_services(
        "_ollama._tcp.srv.test",
        &[
            ("one.srv.test", one.addr().port()),
            ("two.srv.test", two.addr().port()),
        ],
    );
    dns.set_addresses("one.srv.test", &[ip(1)]);
    dns.set_addresses("two.srv.test", &[ip(1)]);
    let mut spec = UpstreamSpec::from_url("dns+srv+http://_ollama._tcp.srv.test").unwrap();
    spec.name = "srv".into();
    let augur = start(&dns, spec).await;
    let mut expected = vec![(member("srv", &one), false), (member("srv", &two), false)];
    expected.sort();
    assert_eq!(members(&augur), expected);
    let streams: Vec<_> = (0..4).map(|_| stream_chat(&augur, None)).collect();
    for r in futures_util::future::join_all(streams).await {
        r.unwrap();
    }
    assert_eq!(chats(&one) + chats(&two), 4);
    augur.stop().await;
}

#[tokio::test]
async fn a_failing_member_has_the_name_looked_up_early() {
    let dns = DnsServer::start().await;
    let mut f = fakes(2, Duration::ZERO).await;
    dns.set_addresses("early.test", &[ip(2), ip(3)]);
    let mut spec =
        UpstreamSpec::from_url(&format!("dns+http://early.test:{}", f[0].addr().port())).unwrap();
    spec.name = "early".into();
    // Never again on its own within the test.
    spec.dns.as_mut().unwrap().interval = Duration::from_secs(3600);
    let augur = start(&dns, spec).await;
    let asked = dns.queries();
    // The first member goes away; requests still succeed on the other.
    f.remove(0).shutdown().await;
    for _ in 0..3 {
        stream_chat(&augur, None).await.unwrap();
    }
    assert!(
        until(Duration::from_secs(10), || dns.queries() > asked).await,
        "no early lookup"
    );
    augur.stop().await;
}
