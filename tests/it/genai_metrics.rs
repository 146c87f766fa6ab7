//! The GenAI metrics in Prometheus, over real sockets: tokens per request
//! by principal, model and upstream, as the upstream reported them; time
//! to first token for streams; time per output token; operation duration;
//! queue wait by principal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client,
    live::{Live, bounded, sha256_hex},
    metric, ndjson,
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

async fn ask(live: &Live, key: &str, model: &str, stream: bool) -> Value {
    let r = client()
        .post(live.url("/api/chat"))
        .bearer_auth(key)
        .json(&json!({"model": model, "stream": stream,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    if stream {
        ndjson(&text).last().unwrap().clone()
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

/// The lines of `name` carrying every one of `labels`.
fn series<'t>(text: &'t str, name: &str, labels: &[&str]) -> Vec<&'t str> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .collect()
}

#[tokio::test]
async fn tokens_are_counted_by_principal_model_and_upstream() {
    bounded(20, async {
        let policy = format!(
            "models:\n  \"genai-*\":\n    concurrency: {{max_in_flight: 4, queue_timeout_ms: 5000}}\n\
             auth:\n  keys:\n    \
             - {{id: genai-team-a, key_sha256: {}}}\n    \
             - {{id: genai-team-b, key_sha256: {}}}\n",
            sha256_hex("genai-a-secret"),
            sha256_hex("genai-b-secret"),
        );
        let fake = FakeOllama::builder()
            .models(&["genai-stream:1b", "genai-whole:1b"])
            .start()
            .await;
        let live = Live::with_fake(fake, &policy).await;
        // The recorder every test of this binary shares.
        let _ = common::metrics();
        let streamed = ask(&live, "genai-a-secret", "genai-stream:1b", true).await;
        let whole = ask(&live, "genai-b-secret", "genai-whole:1b", false).await;
        let text = common::metrics().render();

        for (who, model, done) in [
            ("genai-team-a", "genai-stream:1b", &streamed),
            ("genai-team-b", "genai-whole:1b", &whole),
        ] {
            let who = format!("principal=\"{who}\"");
            let model = format!("gen_ai_request_model=\"{model}\"");
            for (kind, field) in [("input", "prompt_eval_count"), ("output", "eval_count")] {
                let kind = format!("gen_ai_token_type=\"{kind}\"");
                let labels = [who.as_str(), model.as_str(), kind.as_str()];
                let sum = metric(&text, "gen_ai_client_token_usage_sum", &labels);
                let reported = done[field].as_u64().unwrap() as f64;
                assert!(reported > 0.0, "{done}");
                assert_eq!(sum, reported, "{labels:?} in\n{text}");
                let lines = series(&text, "gen_ai_client_token_usage_sum", &labels);
                assert_eq!(lines.len(), 1, "{lines:?}");
                assert!(
                    lines[0].contains("gen_ai_operation_name=\"chat\"")
                        && !lines[0].contains("upstream=\"none\""),
                    "{}",
                    lines[0]
                );
            }
            let ok = [who.as_str(), model.as_str(), "outcome=\"ok\""];
            let done_count = metric(&text, "gen_ai_client_operation_duration_seconds_count", &ok);
            assert_eq!(done_count, 1.0, "{text}");
            let per_token = metric(
                &text,
                "gen_ai_server_time_per_output_token_seconds_count",
                &[model.as_str()],
            );
            assert_eq!(per_token, 1.0, "Ollama's eval_duration: {text}");
            let waited = metric(&text, "augur_queue_wait_seconds_count", &[who.as_str()]);
            assert_eq!(waited, 1.0, "{text}");
        }
        // Time to first token: streams only.
        let ttft = "gen_ai_server_time_to_first_token_seconds_count";
        let stream_model = "gen_ai_request_model=\"genai-stream:1b\"";
        assert_eq!(metric(&text, ttft, &[stream_model]), 1.0, "{text}");
        let whole_model = "gen_ai_request_model=\"genai-whole:1b\"";
        assert!(series(&text, ttft, &[whole_model]).is_empty());
    })
    .await;
}

/// A refused request records no tokens; a model that does not exist
/// records the error and no tokens either.
#[tokio::test]
async fn failed_requests_record_no_tokens() {
    bounded(20, async {
        let live = Live::start("{}\n").await;
        let _ = common::metrics();
        let r = client()
            .post(live.url("/api/chat"))
            .json(&json!({"model": "genai-missing-model", "stream": false,
                          "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        let text = common::metrics().render();
        let model = "gen_ai_request_model=\"genai-missing-model:latest\"";
        let errors = metric(
            &text,
            "gen_ai_client_operation_duration_seconds_count",
            &[model, "outcome=\"error\""],
        );
        assert_eq!(errors, 1.0, "{text}");
        assert!(series(&text, "gen_ai_client_token_usage_sum", &[model]).is_empty());
    })
    .await;
}

/// The OpenAI and Anthropic surfaces count the same tokens, from their
/// `usage`.
#[tokio::test]
async fn every_surface_counts_tokens() {
    bounded(20, async {
        let fake = FakeOllama::builder()
            .models(&["genai-openai:1b", "genai-anthropic:1b"])
            .start()
            .await;
        let live = Live::with_fake(fake, "{}\n").await;
        let _ = common::metrics();
        let messages = json!([{"role": "user", "content": "hi"}]);
        let openai: Value = client()
            .post(live.url("/v1/chat/completions"))
            .json(&json!({"model": "genai-openai:1b", "messages": messages}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let anthropic: Value = client()
            .post(live.url("/v1/messages"))
            .json(&json!({"model": "genai-anthropic:1b", "max_tokens": 64, "messages": messages}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let text = common::metrics().render();
        for (model, usage, input, output) in [
            (
                "genai-openai:1b",
                &openai["usage"],
                "prompt_tokens",
                "completion_tokens",
            ),
            (
                "genai-anthropic:1b",
                &anthropic["usage"],
                "input_tokens",
                "output_tokens",
            ),
        ] {
            let model = format!("gen_ai_request_model=\"{model}\"");
            for (kind, field) in [("input", input), ("output", output)] {
                let kind = format!("gen_ai_token_type=\"{kind}\"");
                let sum = metric(
                    &text,
                    "gen_ai_client_token_usage_sum",
                    &[model.as_str(), kind.as_str(), "principal=\"anonymous\""],
                );
                let reported = usage[field].as_u64().unwrap_or_else(|| panic!("{usage}"));
                assert_eq!(sum, reported as f64, "{model} {kind}: {text}");
            }
        }
    })
    .await;
}

/// A retried answer counts the tokens of both upstream calls.
#[tokio::test]
async fn a_retry_counts_the_tokens_of_every_call() {
    bounded(20, async {
        let policy = format!(
            "auth:\n  keys:\n    - {{id: genai-retry, key_sha256: {}}}\n",
            sha256_hex("genai-retry-secret"),
        );
        let live = Live::start(&policy).await;
        let _ = common::metrics();
        let r = client()
            .post(live.url("/api/chat"))
            .bearer_auth("genai-retry-secret")
            .json(&common::formats::chat(
                "invalid-then-valid",
                common::formats::person(),
                false,
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(common::header(&r, "x-augur-attempts"), Some("2"));
        let answer: Value = r.json().await.unwrap();
        assert_eq!(live.fake.requests("/api/chat"), 2);
        let text = common::metrics().render();
        for (kind, field) in [("input", "prompt_eval_count"), ("output", "eval_count")] {
            let kind = format!("gen_ai_token_type=\"{kind}\"");
            let labels = ["principal=\"genai-retry\"", kind.as_str()];
            let sum = metric(&text, "gen_ai_client_token_usage_sum", &labels);
            let last = answer[field].as_u64().unwrap() as f64;
            assert!(
                last > 0.0 && sum > last,
                "{kind}: {sum} over two calls, {last} in the answer"
            );
        }
    })
    .await;
}

/// Streams on the OpenAI and Anthropic surfaces count tokens too (an
/// OpenAI stream whose client did not ask for `usage` included).
#[tokio::test]
async fn streams_on_every_surface_count_tokens() {
    bounded(20, async {
        let fake = FakeOllama::builder()
            .models(&["genai-openai-stream:1b", "genai-anthropic-stream:1b"])
            .start()
            .await;
        let live = Live::with_fake(fake, "{}\n").await;
        let _ = common::metrics();
        let messages = json!([{"role": "user", "content": "hi"}]);
        for (path, body) in [
            (
                "/v1/chat/completions",
                json!({"model": "genai-openai-stream:1b", "stream": true, "messages": messages}),
            ),
            (
                "/v1/messages",
                json!({"model": "genai-anthropic-stream:1b", "stream": true,
                       "max_tokens": 64, "messages": messages}),
            ),
        ] {
            let r = client()
                .post(live.url(path))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            assert!(r.text().await.unwrap().contains("data:"));
        }
        let text = common::metrics().render();
        for model in ["genai-anthropic-stream:1b", "genai-openai-stream:1b"] {
            let model = format!("gen_ai_request_model=\"{model}\"");
            for kind in ["input", "output"] {
                let kind = format!("gen_ai_token_type=\"{kind}\"");
                let sum = metric(
                    &text,
                    "gen_ai_client_token_usage_sum",
                    &[model.as_str(), kind.as_str()],
                );
                assert!(sum > 0.0, "{model} {kind}: {text}");
            }
            let ttft = metric(
                &text,
                "gen_ai_server_time_to_first_token_seconds_count",
                &[model.as_str()],
            );
            assert_eq!(ttft, 1.0, "{model}");
        }
    })
    .await;
}
