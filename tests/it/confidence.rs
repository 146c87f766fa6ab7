//! How sure the model was: where a policy asks, augur asks the upstream
//! for token probabilities, reports each answer's confidence (the tokens
//! of its argument values, or its words), acts on a low one as the policy
//! says (a retry, a fallback model, the small-model rules), and hands the
//! probabilities to the client only when it asked for them. Without such
//! a policy nothing changes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{client, events, header, live::Live, ndjson, surfaces, surfaces::Surface, tool_turns};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const SCORED: &str = "models:\n  \"tool-json\":\n    confidence: {threshold: 0.5}\n";

fn weather_call(city: &str) -> String {
    json!({"tool_call": {"name": "get_weather", "arguments": {"city": city}}}).to_string()
}

fn messages(text: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": text})]
}

async fn ask(live: &Live, surface: Surface, body: &Value) -> reqwest::Response {
    client()
        .post(live.url(surface.path()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The `augur_confidence` a stream says at its end, on any surface.
fn streamed_confidence(surface: Surface, text: &str) -> Option<Value> {
    let field = |v: &Value| v.get("augur_confidence").cloned();
    match surface {
        Surface::Ollama => ndjson(text).iter().rev().find_map(field),
        Surface::OpenAi => text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find_map(|v| field(&v)),
        Surface::Responses | Surface::Anthropic => events(text).iter().find_map(|(_, v)| field(v)),
    }
}

#[tokio::test]
async fn without_a_policy_nothing_is_asked_or_reported() {
    let live = Live::with_fake(FakeOllama::builder().start().await, "{}").await;
    let body = surfaces::request(
        Surface::Ollama,
        "tool-json",
        &[tool_turns::weather_tool()],
        &messages(&weather_call("Paris")),
        false,
    );
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-confidence"), None);
    let sent = live.fake.last_json("/api/chat").unwrap();
    assert!(sent.get("logprobs").is_none(), "{sent}");
}

/// A confident answer is reported on every surface, whole (headers) and
/// streamed (the closing event), and its probabilities never reach the
/// client that did not ask for them.
#[tokio::test]
async fn confidence_is_reported_on_every_surface() {
    let live = Live::with_fake(FakeOllama::builder().start().await, SCORED).await;
    for surface in Surface::ALL {
        for stream in [false, true] {
            let body = surfaces::request(
                surface,
                "tool-json",
                &[tool_turns::weather_tool()],
                &messages(&weather_call("Paris")),
                stream,
            );
            let r = ask(&live, surface, &body).await;
            assert_eq!(r.status(), 200, "{surface:?} {stream}");
            let sent = live.fake.last_json("/api/chat").unwrap();
            assert_eq!(sent["logprobs"], true, "{sent}");
            assert_eq!(sent["top_logprobs"], 3, "{sent}");
            let head = header(&r, "x-augur-confidence").map(String::from);
            let calls = header(&r, "x-augur-confidence-calls").map(String::from);
            let text = r.text().await.unwrap();
            assert!(
                !text.contains("\"logprob\""),
                "{surface:?} {stream}: {text}"
            );
            let answer = surfaces::answer(surface, stream, &text).unwrap();
            assert_eq!(answer.calls.len(), 1, "{text}");
            if stream {
                let c = streamed_confidence(surface, &text);
                assert_eq!(c, Some(json!(0.99)), "{surface:?}: {text}");
            } else {
                assert_eq!(head.as_deref(), Some("0.99"), "{surface:?}");
                assert_eq!(calls.as_deref(), Some("get_weather=0.99"), "{surface:?}");
            }
        }
    }
}

#[tokio::test]
async fn an_unsure_value_is_reported_low_with_its_weakest_token() {
    let live = Live::with_fake(FakeOllama::builder().start().await, SCORED).await;
    live.fake.push_unsure("tool-json", &[("Zurich", 0.2)]);
    let body = surfaces::request(
        Surface::Ollama,
        "tool-json",
        &[tool_turns::weather_tool()],
        &messages(&weather_call("Zurich")),
        false,
    );
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-confidence"), Some("0.20"));
    assert_eq!(header(&r, "x-augur-confidence-below"), Some("0.5"));
    // Streamed: the done chunk names the weakest token and its alternatives.
    live.fake.push_unsure("tool-json", &[("Zurich", 0.2)]);
    let mut body = body;
    body["stream"] = json!(true);
    let text = ask(&live, Surface::Ollama, &body)
        .await
        .text()
        .await
        .unwrap();
    let done = ndjson(&text).last().cloned().unwrap();
    assert_eq!(done["augur_confidence"], 0.2, "{done}");
    assert_eq!(done["augur_confidence_below"], 0.5, "{done}");
    let call = &done["augur_confidence_calls"][0];
    assert_eq!(call["name"], "get_weather");
    assert!(
        call["weakest"]["token"].as_str().unwrap().starts_with("Z"),
        "{call}"
    );
    assert_eq!(call["weakest"]["alternatives"].as_array().unwrap().len(), 3);
    assert!(done.get("logprobs").is_none(), "{done}");
}

/// `fallback.when.confidence_below`: a valid answer the model was unsure
/// of goes to the fallback model, whose confident answer is returned.
#[tokio::test]
async fn a_low_confidence_answer_goes_to_the_fallback_model() {
    let policy =
        "models:\n  \"small\":\n    fallback: {models: [big], when: {confidence_below: 0.78}}\n";
    let call = weather_call("Zurich");
    let fake = FakeOllama::builder()
        .script("small", vec![call.clone()])
        .script("big", vec![weather_call("Zurich")])
        .unsure("small", &[("Zurich", 0.3)])
        .start()
        .await;
    let live = Live::with_fake(fake, policy).await;
    let body = surfaces::request(
        Surface::Ollama,
        "small",
        &[tool_turns::weather_tool()],
        &messages("Weather in Zurich?"),
        false,
    );
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-fallback"), Some("low_confidence"));
    assert_eq!(header(&r, "x-augur-model"), Some("big"));
    assert_eq!(header(&r, "x-augur-confidence"), Some("0.99"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["model"], "small", "the client's model name stays");
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

/// `validate.on_low_confidence: retry`: the model is asked once more,
/// told which value it was unsure of; its confident answer is returned.
#[tokio::test]
async fn a_low_confidence_answer_is_retried_once() {
    let policy = "models:\n  \"m\":\n    confidence: {threshold: 0.6}\n    validate: {on_low_confidence: retry}\n";
    let fake = FakeOllama::builder()
        .script("m", vec![weather_call("Zurch"), weather_call("Zurich")])
        .start()
        .await;
    let live = Live::with_fake(fake, policy).await;
    live.fake.push_unsure("m", &[("Zurch", 0.1)]);
    live.fake.push_unsure("m", &[]);
    let body = surfaces::request(
        Surface::Ollama,
        "m",
        &[tool_turns::weather_tool()],
        &messages("Weather in Zurich?"),
        false,
    );
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    assert_eq!(header(&r, "x-augur-confidence"), Some("0.99"));
    let v: Value = r.json().await.unwrap();
    let args = &v["message"]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(args, &json!({"city": "Zurich"}));
    let asked = live.fake.last_json("/api/chat").unwrap();
    let note = asked["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.contains("unsure") && note.contains("get_weather"),
        "{note}"
    );
}

/// `tools.small_model: auto`: an invented second city the model was
/// unsure of is dropped; the same answer given confidently is untouched.
#[tokio::test]
async fn small_model_auto_judges_only_unsure_calls() {
    let policy = "models:\n  \"m\":\n    tools: {small_model: auto}\n";
    let two = json!({"tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Zurich"}}]})
    .to_string();
    let fake = FakeOllama::builder()
        .script("m", vec![two.clone(), two])
        .start()
        .await;
    let live = Live::with_fake(fake, policy).await;
    let body = surfaces::request(
        Surface::Ollama,
        "m",
        &[tool_turns::weather_tool()],
        &messages("What is the weather in Paris?"),
        false,
    );
    let cities = |v: &Value| -> Vec<Value> {
        v["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["function"]["arguments"]["city"].clone())
            .collect()
    };
    live.fake.push_unsure("m", &[]);
    let r = ask(&live, Surface::Ollama, &body).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        cities(&v),
        [json!("Paris"), json!("Zurich")],
        "sure: untouched"
    );
    live.fake.push_unsure("m", &[("Zurich", 0.2)]);
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(header(&r, "x-augur-repaired"), Some("dropped_ungrounded"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(cities(&v), [json!("Paris")], "unsure Zurich dropped");
}

/// A call the model wrote twice is returned once, and scored once: the
/// per-call report lines up with the calls returned.
#[tokio::test]
async fn a_repeated_call_is_reported_once() {
    let live = Live::with_fake(FakeOllama::builder().start().await, SCORED).await;
    let call = json!({"name": "get_weather", "arguments": {"city": "Paris"}});
    let twice = json!({"tool_calls": [call, call]}).to_string();
    for stream in [false, true] {
        let body = surfaces::request(
            Surface::Ollama,
            "tool-json",
            &[tool_turns::weather_tool()],
            &messages(&twice),
            stream,
        );
        let r = ask(&live, Surface::Ollama, &body).await;
        let calls = header(&r, "x-augur-confidence-calls").map(String::from);
        let text = r.text().await.unwrap();
        let answer = surfaces::answer(Surface::Ollama, stream, &text).unwrap();
        assert_eq!(answer.calls.len(), 1, "{text}");
        if stream {
            let done = ndjson(&text).last().cloned().unwrap();
            let scored = done["augur_confidence_calls"].as_array().unwrap().len();
            assert_eq!(scored, 1, "{done}");
        } else {
            assert_eq!(calls.as_deref(), Some("get_weather=0.99"));
        }
    }
}

/// Under `small_model: auto` each call is judged by its own score, also
/// after a call the model repeated (returned once).
#[tokio::test]
async fn small_model_auto_judges_each_call_by_its_own_score() {
    let policy = "models:\n  \"m\":\n    tools: {small_model: auto}\n";
    let paris = json!({"name": "get_weather", "arguments": {"city": "Paris"}});
    let zurich = json!({"name": "get_weather", "arguments": {"city": "Zurich"}});
    let answer = json!({"tool_calls": [paris, paris, zurich]}).to_string();
    let fake = FakeOllama::builder()
        .script("m", vec![answer])
        .unsure("m", &[("Zurich", 0.2)])
        .start()
        .await;
    let live = Live::with_fake(fake, policy).await;
    let body = surfaces::request(
        Surface::Ollama,
        "m",
        &[tool_turns::weather_tool()],
        &messages("What is the weather in Paris?"),
        false,
    );
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(header(&r, "x-augur-repaired"), Some("dropped_ungrounded"));
    let v: Value = r.json().await.unwrap();
    let calls = v["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "unsure Zurich dropped: {v}");
    assert_eq!(calls[0]["function"]["arguments"]["city"], "Paris");
}

/// A client that asks for `logprobs` gets them as Ollama sends them, on
/// Ollama's routes and on `/v1/chat/completions`.
#[tokio::test]
async fn a_client_that_asks_for_probabilities_gets_them() {
    let live = Live::with_fake(FakeOllama::builder().start().await, SCORED).await;
    let mut body = surfaces::request(
        Surface::Ollama,
        "tool-json",
        &[tool_turns::weather_tool()],
        &messages(&weather_call("Paris")),
        false,
    );
    body["logprobs"] = json!(true);
    body["top_logprobs"] = json!(1);
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(header(&r, "x-augur-confidence"), Some("0.99"));
    let v: Value = r.json().await.unwrap();
    assert!(
        v["logprobs"].as_array().is_some_and(|l| !l.is_empty()),
        "{v}"
    );
    assert_eq!(live.fake.last_json("/api/chat").unwrap()["top_logprobs"], 1);

    let mut body = surfaces::request(
        Surface::OpenAi,
        "tool-json",
        &[tool_turns::weather_tool()],
        &messages(&weather_call("Paris")),
        false,
    );
    body["logprobs"] = json!(true);
    let v: Value = ask(&live, Surface::OpenAi, &body)
        .await
        .json()
        .await
        .unwrap();
    let content = &v["choices"][0]["logprobs"]["content"];
    assert!(content.as_array().is_some_and(|l| !l.is_empty()), "{v}");
}

/// A native-tools model's call is scored by the text it came from.
#[tokio::test]
async fn a_native_call_is_scored() {
    let policy = "models:\n  \"native\":\n    confidence: {}\n";
    let fake = FakeOllama::builder()
        .script_tool_calls(
            "native",
            vec![json!([{"name": "get_weather", "arguments": {"city": "Lyon"}}])],
        )
        .unsure("native", &[("Lyon", 0.4)])
        .start()
        .await;
    let live = Live::with_fake(fake, policy).await;
    let body = surfaces::request(
        Surface::Ollama,
        "native",
        &[tool_turns::weather_tool()],
        &messages("Weather in Lyon?"),
        false,
    );
    let r = ask(&live, Surface::Ollama, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-confidence"), Some("0.40"));
    assert_eq!(
        header(&r, "x-augur-confidence-calls"),
        Some("get_weather=0.40")
    );
}

/// An upstream that returns no probabilities leaves the confidence
/// unknown, and the answer as it was.
#[tokio::test]
async fn an_upstream_without_probabilities_is_unknown() {
    use axum::{Json, routing::post};
    let app = axum::Router::new().route(
        "/api/chat",
        post(|Json(body): Json<Value>| async move {
            Json(
                json!({"model": body["model"], "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": "Hello."},
                "done": true, "done_reason": "stop", "eval_count": 2}),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let handle = common::metrics();
    let before = common::metric(
        &handle.render(),
        "augur_confidence_unknown_total",
        &["model=\"plain-unknown\""],
    );
    let augur = common::start_config(
        augur::config::Config {
            upstreams: common::upstreams(&url),
            ..augur::config::Config::default()
        },
        augur::policy::load_texts(
            &[(
                "10.yaml".to_string(),
                "models:\n  \"plain-unknown\":\n    confidence: {}\n".to_string(),
            )],
            std::path::Path::new("."),
        )
        .unwrap(),
    )
    .await;
    let r = common::post(
        &augur,
        "/api/chat",
        &json!({"model": "plain-unknown", "stream": false, "messages": messages("hi")}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-confidence"), Some("unknown"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], "Hello.");
    let after = common::metric(
        &handle.render(),
        "augur_confidence_unknown_total",
        &["model=\"plain-unknown\""],
    );
    assert_eq!(after - before, 1.0);
}

/// A streamed tool call is held until complete anyway: one the model was
/// unsure of, before anything went out, goes to the fallback model, whose
/// answer streams instead; a retry works the same way.
#[tokio::test]
async fn a_streamed_unsure_call_goes_to_the_fallback_or_is_retried() {
    let policy = "models:\n  \"small\":\n    fallback: {models: [big], when: {confidence_below: 0.78}}\n  \
                  \"m\":\n    confidence: {threshold: 0.6}\n    validate: {on_low_confidence: retry}\n";
    let fake = FakeOllama::builder()
        .script("small", vec![weather_call("Zurch")])
        .script("big", vec![weather_call("Zurich")])
        .unsure("small", &[("Zurch", 0.3)])
        .script("m", vec![weather_call("Zurch"), weather_call("Zurich")])
        .start()
        .await;
    let live = Live::with_fake(fake, policy).await;
    let city = |text: &str| {
        let calls: Vec<Value> = common::tool_calls(&ndjson(text))
            .into_iter()
            .cloned()
            .collect();
        assert_eq!(calls.len(), 1, "{text}");
        calls[0]["function"]["arguments"]["city"].clone()
    };
    let body = |model: &str| {
        surfaces::request(
            Surface::Ollama,
            model,
            &[tool_turns::weather_tool()],
            &messages("Weather in Zurich?"),
            true,
        )
    };
    let text = ask(&live, Surface::Ollama, &body("small"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(city(&text), "Zurich", "{text}");
    let done = ndjson(&text).last().cloned().unwrap();
    assert_eq!(done["augur_fallback"], "low_confidence", "{done}");
    assert_eq!(done["augur_model"], "big", "{done}");
    assert_eq!(done["augur_confidence"], 0.99, "{done}");

    live.fake.push_unsure("m", &[("Zurch", 0.1)]);
    live.fake.push_unsure("m", &[]);
    let text = ask(&live, Surface::Ollama, &body("m"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(city(&text), "Zurich", "{text}");
    assert_eq!(live.fake.requests("/api/chat"), 4);
}
