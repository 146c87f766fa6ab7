//! `tools.guard`: tools a caller is never handed, and calls whose
//! arguments break a rule (an SSRF URL, a quantity past its bound)
//! withheld, flagged or logged, on emulated and native calls, whole and
//! streamed, on the Ollama and OpenAI surfaces.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{client, header, live::Live, metric, metrics, ndjson};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const GUARD: &str = "models:\n  \"*\":\n    tools:\n      guard:\n        deny: ['shell_*']\n        risk: {fetch_url: medium, give_item: high}\n        rules:\n          - id: ssrf\n            tool: fetch_url\n            pointer: /url\n            url: {block_private: true}\n          - id: qty\n            tool: give_item\n            pointer: /qty\n            maximum: 10\n            action: flag\n";

fn tool(name: &str, param: &str, kind: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": format!("{name} tool"),
        "parameters": {"type": "object", "properties": {param: {"type": kind}}, "required": [param]}}})
}

fn tools() -> Value {
    json!([
        tool("fetch_url", "url", "string"),
        tool("give_item", "qty", "integer"),
        tool("shell_exec", "cmd", "string")
    ])
}

/// An emulated request: the `tool-json` fake answers the user's text as
/// the model's output.
fn emulated(answer: &Value, stream: bool) -> Value {
    json!({"model": "tool-json", "stream": stream, "tools": tools(),
        "messages": [{"role": "user", "content": answer.to_string()}]})
}

fn one_call(name: &str, args: Value) -> Value {
    json!({"tool_call": {"name": name, "arguments": args}})
}

async fn live(fake: FakeOllama) -> Live {
    Live::with_fake(fake, GUARD).await
}

async fn post(live: &Live, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(live.url(path))
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_emulated_call_to_a_private_url_is_refused_and_a_public_one_passes() {
    let handle = metrics();
    let live = live(FakeOllama::builder().start().await).await;
    let bad = one_call(
        "fetch_url",
        json!({"url": "http://169.254.169.254/latest/meta-data/"}),
    );
    let r = post(&live, "/api/chat", &emulated(&bad, false)).await;
    assert_eq!(r.status(), 422);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("refused by policy") && text.contains("cloud metadata"),
        "{text}"
    );
    assert!(!text.contains("169.254"), "the value is not echoed: {text}");
    let text = handle.render();
    assert!(
        metric(
            &text,
            "augur_tool_guard_total",
            &["rule=\"ssrf\"", "action=\"block\""]
        ) >= 1.0,
        "{text}"
    );

    for spelling in [
        "http://0177.1/",
        "http://evil.com@127.0.0.1/",
        "http://[::ffff:10.0.0.1]/",
    ] {
        let bad = one_call("fetch_url", json!({"url": spelling}));
        let r = post(&live, "/api/chat", &emulated(&bad, false)).await;
        assert_eq!(r.status(), 422, "{spelling}");
    }

    let good = one_call("fetch_url", json!({"url": "https://example.com/about"}));
    let r = post(&live, "/api/chat", &emulated(&good, false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-guard"), None);
    assert_eq!(header(&r, "x-augur-tool-risk"), Some("medium"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"]["url"],
        "https://example.com/about"
    );
}

#[tokio::test]
async fn a_denied_tool_is_never_offered() {
    let live = live(FakeOllama::builder().start().await).await;
    let good = one_call("give_item", json!({"qty": 1}));
    let r = post(&live, "/api/chat", &emulated(&good, false)).await;
    assert_eq!(r.status(), 200);
    let sent = live.fake.last_json("/api/chat").unwrap().to_string();
    assert!(
        !sent.contains("shell_exec"),
        "the denied tool went upstream"
    );
    assert!(sent.contains("give_item"));
    assert_eq!(header(&r, "x-augur-tool-risk"), Some("high"));
}

#[tokio::test]
async fn a_flagged_call_goes_out_marked_whole_and_streamed() {
    let live = live(FakeOllama::builder().start().await).await;
    let many = one_call("give_item", json!({"qty": 999}));
    let r = post(&live, "/api/chat", &emulated(&many, false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-guard"), Some("flag:qty"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"]["qty"],
        999
    );

    let r = post(&live, "/api/chat", &emulated(&many, true)).await;
    let chunks = ndjson(&r.text().await.unwrap());
    let done = chunks.last().unwrap();
    assert_eq!(done["augur_guard"], "flag:qty", "{done}");
    assert_eq!(done["augur_tool_risk"], "high");
    assert!(
        chunks
            .iter()
            .any(|c| c["message"]["tool_calls"][0]["function"]["name"] == "give_item")
    );
}

#[tokio::test]
async fn a_streamed_blocked_call_never_reaches_the_client() {
    let live = live(FakeOllama::builder().start().await).await;
    let bad = one_call("fetch_url", json!({"url": "http://localhost:8080/admin"}));
    let r = post(&live, "/api/chat", &emulated(&bad, true)).await;
    let text = r.text().await.unwrap();
    assert!(!text.contains("localhost:8080"), "{text}");
    let chunks = ndjson(&text);
    let last = chunks.last().unwrap();
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("refused by policy"),
        "{last}"
    );
}

#[tokio::test]
async fn native_calls_are_guarded_too() {
    let fake = FakeOllama::builder()
        .script_tool_calls(
            "native",
            vec![
                json!([{"name": "fetch_url", "arguments": {"url": "http://2130706433/"}},
                       {"name": "fetch_url", "arguments": {"url": "https://example.com/"}}]),
                json!([{"name": "fetch_url", "arguments": {"url": "http://[fd00:ec2::254]/"}}]),
            ],
        )
        .start()
        .await;
    let live = live(fake).await;
    let body = json!({"model": "native", "stream": false, "tools": tools(),
        "messages": [{"role": "user", "content": "Fetch two pages"}]});
    let r = post(&live, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-guard"), Some("block:ssrf"));
    let v: Value = r.json().await.unwrap();
    let calls = v["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    assert_eq!(
        calls[0]["function"]["arguments"]["url"],
        "https://example.com/"
    );

    let mut body = body;
    body["stream"] = json!(true);
    let text = post(&live, "/api/chat", &body).await.text().await.unwrap();
    assert!(!text.contains("fd00:ec2"), "{text}");
    assert!(ndjson(&text).last().unwrap()["error"].is_string(), "{text}");
}

#[tokio::test]
async fn the_openai_surface_sees_the_refusal_in_its_shape_and_the_marks_in_headers() {
    let live = live(FakeOllama::builder().start().await).await;
    let oa = |answer: &Value| {
        json!({"model": "tool-json", "tools": tools(),
        "messages": [{"role": "user", "content": answer.to_string()}]})
    };
    let bad = one_call("fetch_url", json!({"url": "http://127.1/"}));
    let r = post(&live, "/v1/chat/completions", &oa(&bad)).await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused by policy"),
        "{v}"
    );
    let many = one_call("give_item", json!({"qty": 50}));
    let r = post(&live, "/v1/chat/completions", &oa(&many)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-guard"), Some("flag:qty"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "give_item"
    );
}

#[tokio::test]
async fn a_bad_guard_is_refused_at_load_naming_the_key() {
    let fake = FakeOllama::builder().start().await;
    let live = Live::with_fake(fake, "{}\n").await;
    live.rewrite("models:\n  \"*\":\n    tools:\n      guard:\n        rules:\n          - pointer: /url\n            action: drop\n            max_length: 3\n");
    common::live::within_2s("the error shown", || {
        live.augur.state.policies.status().last_error.is_some()
    })
    .await;
    let error = live.augur.state.policies.status().last_error.unwrap();
    assert!(
        error.contains("tools.guard") && error.contains("action"),
        "{error}"
    );
}

#[tokio::test]
async fn the_anthropic_and_responses_surfaces_are_guarded() {
    let live = live(FakeOllama::builder().start().await).await;
    let bad = one_call(
        "fetch_url",
        json!({"url": "http://metadata.google.internal/"}),
    );
    let anthropic_tools = json!([{"name": "fetch_url", "description": "Fetch a page",
        "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}]);
    let body = json!({"model": "tool-json", "max_tokens": 256, "tools": anthropic_tools,
        "messages": [{"role": "user", "content": bad.to_string()}]});
    let r = post(&live, "/v1/messages", &body).await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error", "{v}");
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let text = post(&live, "/v1/messages", &streamed)
        .await
        .text()
        .await
        .unwrap();
    assert!(!text.contains("metadata.google"), "{text}");
    assert!(text.contains("event: error"), "{text}");

    let responses_tools = json!([{"type": "function", "name": "fetch_url",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}]);
    let body = json!({"model": "tool-json", "tools": responses_tools, "input": bad.to_string()});
    let r = post(&live, "/v1/responses", &body).await;
    assert_eq!(r.status(), 422);
    let good = one_call("fetch_url", json!({"url": "https://example.org/"}));
    let body = json!({"model": "tool-json", "tools": responses_tools, "input": good.to_string()});
    let r = post(&live, "/v1/responses", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-tool-risk"), Some("medium"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["output"][0]["type"], "function_call", "{v}");
}

/// Each finding goes to the audit log with its rule and action, the
/// arguments only when the policy includes them.
#[tokio::test]
async fn findings_are_written_to_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let policy = format!("audit:\n  path: {}\n{GUARD}", path.display());
    let live = Live::with_fake(FakeOllama::builder().start().await, &policy).await;
    let bad = one_call("fetch_url", json!({"url": "http://127.0.0.1/"}));
    let r = post(&live, "/api/chat", &emulated(&bad, false)).await;
    assert_eq!(r.status(), 422);
    let mut lines = Vec::new();
    for _ in 0..100 {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        lines = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["outcome"] == "guard_block:ssrf")
            .collect();
        if !lines.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["tool"], "fetch_url");
    assert!(lines[0].get("arguments").is_none(), "{}", lines[0]);
}

/// A key's own guard applies to its calls only, after the model's.
#[tokio::test]
async fn a_keys_guard_applies_to_its_calls_only() {
    let policy = format!(
        "auth:\n  required: true\n  keys:\n    - id: npc\n      key_sha256: {}\n      guard:\n        deny: [fetch_url]\n    - id: agent\n      key_sha256: {}\n{GUARD}",
        common::live::sha256_hex("npc-key"),
        common::live::sha256_hex("agent-key")
    );
    let live = Live::with_fake(FakeOllama::builder().start().await, &policy).await;
    let good = one_call("fetch_url", json!({"url": "https://example.com/"}));
    let ask = |key: &'static str| {
        client()
            .post(live.url("/api/chat"))
            .bearer_auth(key)
            .json(&emulated(&good, false))
            .send()
    };
    let r = ask("agent-key").await.unwrap();
    assert_eq!(r.status(), 200);
    let r = ask("npc-key").await.unwrap();
    assert_eq!(r.status(), 422, "{:?}", r.text().await);
    let sent = live.fake.last_json("/api/chat").unwrap();
    let offered = format!("{}{}", sent["format"], sent["tools"]);
    assert!(offered.contains("give_item"), "{offered}");
    assert!(
        !offered.contains("fetch_url"),
        "the key's denied tool went upstream: {offered}"
    );
}

/// An `enum` rule narrows the grammar: the model is offered only the
/// allowed values.
#[tokio::test]
async fn an_enum_rule_goes_into_the_grammar() {
    let policy = "models:\n  \"*\":\n    tools:\n      guard:\n        rules:\n          - tool: give_item\n            pointer: /qty\n            enum: [1, 2, 3]\n";
    let live = Live::with_fake(FakeOllama::builder().start().await, policy).await;
    let ok = one_call("give_item", json!({"qty": 2}));
    let r = post(&live, "/api/chat", &emulated(&ok, false)).await;
    assert_eq!(r.status(), 200);
    let sent = live.fake.last_json("/api/chat").unwrap();
    assert!(
        sent["format"].to_string().contains("\"enum\":[1,2,3]"),
        "{}",
        sent["format"]
    );
}

/// When every call of a whole answer is refused, the model is asked once
/// more, told which call was refused and why, and its answer comes back.
#[tokio::test]
async fn the_model_is_asked_once_more_after_every_call_was_refused() {
    let fake = FakeOllama::builder()
        .script_tools(
            "native",
            vec![
                fake_ollama::tool_calls_reply(&json!([{"name": "fetch_url",
                    "arguments": {"url": "http://169.254.169.254/"}}])),
                "I cannot fetch that address.".to_string(),
            ],
        )
        .start()
        .await;
    let live = live(fake).await;
    let body = json!({"model": "native", "stream": false, "tools": tools(),
        "messages": [{"role": "user", "content": "Fetch the metadata"}]});
    let r = post(&live, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    // What fired in the first answer is reported on the one returned.
    assert_eq!(header(&r, "x-augur-guard"), Some("block:ssrf"));
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["content"], "I cannot fetch that address.",
        "{v}"
    );
    assert!(v["message"].get("tool_calls").is_none(), "{v}");
    let asked = live.fake.last_json("/api/chat").unwrap();
    let last = asked["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let told = last["content"].as_str().unwrap();
    assert!(
        told.contains("refused by policy") && told.contains("cloud metadata"),
        "{told}"
    );
    assert!(
        !told.contains("169.254"),
        "the value is not repeated: {told}"
    );
    assert_eq!(live.fake.requests("/api/chat"), 2);
}

/// The block that led to asking once more is reported on every surface's
/// answer, with both upstream calls counted.
#[tokio::test]
async fn a_refusal_asked_again_is_reported_on_every_surface() {
    use common::surfaces::{self, Surface};
    let fake = FakeOllama::builder()
        .script_tools("native", vec![])
        .start()
        .await;
    let live = live(fake).await;
    let tools: Vec<Value> = tools().as_array().unwrap().clone();
    let messages = [json!({"role": "user", "content": "Fetch the metadata"})];
    for surface in Surface::ALL {
        live.fake.push_script(
            "native",
            vec![
                fake_ollama::tool_calls_reply(&json!([{"name": "fetch_url",
                    "arguments": {"url": "http://169.254.169.254/"}}])),
                "I cannot fetch that address.".to_string(),
            ],
        );
        let body = surfaces::request(surface, "native", &tools, &messages, false);
        let r = post(&live, surface.path(), &body).await;
        assert_eq!(r.status(), 200, "{surface:?}");
        assert_eq!(
            header(&r, "x-augur-guard"),
            Some("block:ssrf"),
            "{surface:?}"
        );
        assert_eq!(header(&r, "x-augur-attempts"), Some("2"), "{surface:?}");
        let text = r.text().await.unwrap();
        let answer = surfaces::answer(surface, false, &text).unwrap();
        assert_eq!(answer.text, "I cannot fetch that address.", "{surface:?}");
        assert!(answer.calls.is_empty(), "{surface:?}: {text}");
    }
}
