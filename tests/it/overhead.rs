//! Overhead is augur's own time: a streamed answer augur reads itself
//! (emulated tools, on Ollama's and OpenAI's routes) from a slow model
//! spends its time on the upstream, from sending the request to the last
//! byte of the answer, and the access log and `augur_overhead_seconds`
//! say so, as the `augur` binary writes them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client, metric,
    process::{Process, Start, access_line},
    weather_tool,
};
use fake_ollama::FakeOllama;
use serde_json::json;

/// A call the `dribble` model writes back two characters at a time, 20 ms
/// apart: about 1.3 s of model time.
fn slow_call() -> String {
    let city = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch";
    json!({"tool_call": {"name": "get_weather", "arguments": {"city": city}}}).to_string()
}

#[tokio::test]
async fn a_slow_models_stream_is_upstream_time_not_overhead() {
    common::live::bounded(60, async {
        let fake = FakeOllama::builder().start().await;
        let logs = tempfile::NamedTempFile::new().unwrap();
        let augur = Process::start(Start {
            upstream: &fake.url(),
            config: Some("[log]\nformat = \"json\"\n"),
            log: Some(logs.path()),
            ..Start::default()
        })
        .await;
        let messages = json!([{"role": "user", "content": slow_call()}]);
        for (id, path) in [("native", "/api/chat"), ("openai", "/v1/chat/completions")] {
            let body = json!({"model": "dribble", "stream": true, "messages": messages,
                              "tools": [weather_tool()]});
            let r = client()
                .post(format!("{}{path}", augur.url))
                .header("x-request-id", id)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            assert_eq!(common::header(&r, "x-augur-emulated"), Some("tools"));
            let text = r.text().await.unwrap();
            assert!(text.contains("get_weather"), "{text}");

            let line = access_line(logs.path(), id).await;
            let ms = |k: &str| line[k].as_f64().unwrap();
            let (total, upstream, overhead) =
                (ms("total_ms"), ms("upstream_ms"), ms("overhead_ms"));
            eprintln!(
                "{path}: total {total:.0} ms, upstream {upstream:.0} ms, overhead {overhead:.1} ms"
            );
            assert!(total > 800.0, "the model was not slow: {line}");
            assert!(
                overhead * 4.0 < total,
                "the model's time counted as overhead: {line}"
            );
            assert!((total - upstream - overhead).abs() < 1.0, "{line}");
        }

        // The metrics say the same, route by route.
        let metrics = common::get_text(&format!("{}/metrics", augur.admin)).await;
        for route in ["/api/chat", "/v1/chat/completions"] {
            let label = format!("route=\"{route}\"");
            let sum = |name: &str| metric(&metrics, name, &[label.as_str()]);
            let total = sum("augur_request_duration_seconds_sum");
            let upstream = sum("augur_upstream_duration_seconds_sum");
            let overhead = sum("augur_overhead_seconds_sum");
            assert!(total > 0.8, "{route}: {metrics}");
            assert!(
                overhead * 4.0 < total,
                "{route}: overhead {overhead} of {total}"
            );
            assert!(
                upstream * 4.0 > total * 3.0,
                "{route}: upstream {upstream} of {total}"
            );
        }
    })
    .await;
}
