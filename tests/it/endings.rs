//! How requests ended, as the `augur` binary reports it: the access log's
//! `outcome`, the `ending` label of `augur_requests_total` and the status
//! page's counts agree, request by request, on one vocabulary (complete,
//! refused, error, upstream_cut, timed_out, client_left), for answers
//! forwarded as they came and answers augur read itself, NDJSON and SSE,
//! whole and streamed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use common::{
    client, metric,
    process::{Process, Start, access_line},
    weather_tool,
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const CONFIG: &str = "[upstream]\nidle_timeout_ms = 300\nfirst_byte_timeout_ms = 500\n\
                      [log]\nformat = \"json\"\n";
const POLICY: &str = "models:\n  limited:\n    rate_limit: {requests_per_minute: 1}\n";

/// One request of the tour: where it goes, and how it must end.
struct Case {
    id: &'static str,
    path: &'static str,
    body: Value,
    /// The statuses it may have (a cut before augur's first byte is a
    /// 502, after it a 200).
    statuses: &'static [u16],
    ending: &'static str,
    /// The client reads one piece of the body and leaves.
    leaves: bool,
}

fn case(
    id: &'static str,
    path: &'static str,
    body: Value,
    statuses: &'static [u16],
    ending: &'static str,
) -> Case {
    Case {
        id,
        path,
        body,
        statuses,
        ending,
        leaves: false,
    }
}

fn chat(model: &str, extra: Value) -> Value {
    let mut body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body
}

fn cases() -> Vec<Case> {
    let stalls = json!({"options": {"interval_ms": 1500}});
    vec![
        case(
            "plain",
            "/api/chat",
            chat("gemma3", json!({})),
            &[200],
            "complete",
        ),
        case(
            "read",
            "/api/chat",
            chat("gemma3", json!({"format": "json"})),
            &[200],
            "complete",
        ),
        // The upstream cuts: forwarded NDJSON and SSE, augur's own NDJSON
        // and SSE readings, a whole answer forwarded.
        case(
            "cut-ndjson",
            "/api/chat",
            chat("stream-cut", json!({})),
            &[200],
            "upstream_cut",
        ),
        case(
            "cut-read",
            "/api/chat",
            chat("mid-cut", json!({"format": "json"})),
            &[200, 502],
            "upstream_cut",
        ),
        case(
            "cut-sse",
            "/v1/chat/completions",
            chat("stream-cut", json!({"stream": true})),
            &[200],
            "upstream_cut",
        ),
        case(
            "cut-tools-sse",
            "/v1/chat/completions",
            chat(
                "mid-cut",
                json!({"stream": true, "tools": [weather_tool()]}),
            ),
            &[200, 502],
            "upstream_cut",
        ),
        case(
            "cut-whole",
            "/api/chat",
            chat(
                "mid-cut",
                json!({"stream": false, "options": {"cut_bytes": 1}}),
            ),
            &[200],
            "upstream_cut",
        ),
        // The upstream is silent: mid-stream (forwarded, read), or before
        // its head.
        case(
            "stall",
            "/api/chat",
            chat("dribble", stalls.clone()),
            &[200],
            "timed_out",
        ),
        case(
            "stall-read",
            "/api/chat",
            chat(
                "dribble",
                json!({"format": "json", "options": {"interval_ms": 1500}}),
            ),
            &[200, 504],
            "timed_out",
        ),
        case(
            "first-byte",
            "/api/chat",
            chat("slow-first-byte", json!({})),
            &[504],
            "timed_out",
        ),
        // Errors: the upstream's own, passed on.
        case(
            "upstream-500",
            "/api/chat",
            chat("error-500", json!({})),
            &[500],
            "error",
        ),
        case(
            "unknown",
            "/api/chat",
            chat("limited", json!({})),
            &[404],
            "error",
        ),
        // augur refuses (the rate limit of the model asked for just now).
        case(
            "limited",
            "/api/chat",
            chat("limited", json!({})),
            &[429],
            "refused",
        ),
        Case {
            leaves: true,
            ..case(
                "leaves",
                "/api/chat",
                chat("dribble", json!({})),
                &[200],
                "client_left",
            )
        },
    ]
}

/// Send `c`; its status.
async fn send(url: &str, c: &Case) -> u16 {
    let mut r = client()
        .post(format!("{url}{}", c.path))
        .header("x-request-id", c.id)
        .json(&c.body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    if c.leaves {
        assert!(
            r.chunk().await.unwrap().is_some(),
            "{}: no first piece",
            c.id
        );
        return status;
    }
    // The body, whole or cut (an aborted whole answer fails to read).
    let _ = r.bytes().await;
    status
}

#[tokio::test]
async fn every_report_says_how_each_request_ended() {
    common::live::bounded(90, async {
        let fake = FakeOllama::builder().slow_ms(2000).start().await;
        let logs = tempfile::NamedTempFile::new().unwrap();
        let policies = tempfile::tempdir().unwrap();
        common::write_policy(policies.path(), "limits.yaml", POLICY);
        let augur = Process::start(Start {
            upstream: &fake.url(),
            policies: Some(policies.path()),
            config: Some(CONFIG),
            log: Some(logs.path()),
            ..Start::default()
        })
        .await;

        let cases = cases();
        let mut expected: BTreeMap<&str, u64> = BTreeMap::new();
        for c in &cases {
            let status = send(&augur.url, c).await;
            assert!(c.statuses.contains(&status), "{}: status {status}", c.id);
            let line = access_line(logs.path(), c.id).await;
            assert_eq!(line["outcome"], c.ending, "{}: {line}", c.id);
            assert_eq!(line["status"], status, "{}: {line}", c.id);
            *expected.entry(c.ending).or_default() += 1;
        }

        // The request metrics count the same endings.
        let metrics = common::get_text(&format!("{}/metrics", augur.admin)).await;
        for (ending, n) in &expected {
            let label = format!("ending=\"{ending}\"");
            let counted: f64 = metrics
                .lines()
                .filter(|l| l.starts_with("augur_requests_total{") && l.contains(&label))
                .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
                .sum();
            assert_eq!(counted, *n as f64, "{ending}:\n{metrics}");
        }
        let cut = metric(
            &metrics,
            "augur_requests_total",
            &[
                "route=\"/api/chat\"",
                "status=\"200\"",
                "ending=\"upstream_cut\"",
            ],
        );
        assert!(cut >= 2.0, "{metrics}");

        // And so does the status page.
        let status: Value = client()
            .get(format!("{}/-/status.json", augur.admin))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let endings = &status["totals"]["endings"];
        for (ending, n) in &expected {
            assert_eq!(endings[*ending], *n, "{ending}: {endings}");
        }
        assert_eq!(status["totals"]["requests"], cases.len() as u64);
    })
    .await;
}
