//! `tools.guard` judges what the client will read, on every surface,
//! whole and streamed: a URL its readers disagree on is refused
//! (`ambiguous_url`) even where the rule allows its WHATWG host; arguments
//! sent as JSON text are read as lenient clients read them (`NaN`,
//! `1e400`, lone surrogates), and refused when no reader reads them alike
//! (`unreadable_arguments`); values past the guard's bound refuse the
//! call instead of passing unchecked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client,
    live::Live,
    surfaces::{self, Surface},
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// `fetch_url` may only reach `api.example.com` (no `block_private`: the
/// host list is the whole rule); `give_item` gives at most 10.
const POLICY: &str = "models:\n  \"*\":\n    tools:\n      native: {validate: false}\n      guard:\n        rules:\n          - id: api-only\n            tool: fetch_url\n            pointer: /url\n            url: {hosts: [api.example.com], block_private: false}\n          - id: ssrf\n            tool: fetch_all\n            pointer: /urls/*\n            url: {block_private: true}\n          - id: qty\n            tool: give_item\n            pointer: /qty\n            maximum: 10\n";

fn tool(name: &str, param: &str, schema: Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": format!("{name} tool"),
        "parameters": {"type": "object", "properties": {param: schema}, "required": [param]}}})
}

fn tools() -> Vec<Value> {
    vec![
        tool("fetch_url", "url", json!({"type": "string"})),
        tool(
            "fetch_all",
            "urls",
            json!({"type": "array", "items": {"type": "string"}}),
        ),
        tool("give_item", "qty", json!({"type": "number"})),
    ]
}

/// Whether `tool` was called in the answer `body` of `surface`.
fn called(surface: Surface, stream: bool, body: &str, tool: &str) -> bool {
    surfaces::answer(surface, stream, body)
        .is_ok_and(|a| a.calls.iter().any(|(name, _)| name == tool))
}

/// Ask `model` on every surface, whole and streamed: each surface, mode,
/// status and body.
async fn everywhere(live: &Live, model: &str, user: &str) -> Vec<(Surface, bool, u16, String)> {
    let mut out = Vec::new();
    for surface in Surface::ALL {
        for stream in [false, true] {
            let messages = [json!({"role": "user", "content": user})];
            let body = surfaces::request(surface, model, &tools(), &messages, stream);
            let r = client()
                .post(live.augur.url.clone() + surface.path())
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            out.push((surface, stream, status, r.text().await.unwrap()));
        }
    }
    out
}

/// The call to `tool` never reaches the client, nor `secret` in it.
fn refused(answers: &[(Surface, bool, u16, String)], tool: &str, secret: &str) {
    for (surface, stream, status, body) in answers {
        let at = format!("{surface:?}, stream {stream}, {status}");
        assert!(!body.contains(secret), "{at}: {body}");
        assert!(!called(*surface, *stream, body, tool), "{at}: {body}");
    }
}

/// The call to `tool` reaches the client, whole and streamed.
fn passed(answers: &[(Surface, bool, u16, String)], tool: &str) {
    for (surface, stream, status, body) in answers {
        let at = format!("{surface:?}, stream {stream}");
        assert_eq!(*status, 200, "{at}: {body}");
        assert!(called(*surface, *stream, body, tool), "{at}: {body}");
    }
}

/// An emulated call (the `tool-json` fake writes the user's text as the
/// model's output).
fn emulated(name: &str, arguments: Value) -> String {
    json!({"tool_call": {"name": name, "arguments": arguments}}).to_string()
}

/// A fake whose `native` model answers `arguments` (as written: an
/// object, or JSON text in a string) to `tool` every time it is asked.
async fn native(tool: &str, arguments: Value) -> Live {
    let call = json!([{"name": tool, "arguments": arguments}]);
    let fake = FakeOllama::builder()
        .script_tool_calls("native", vec![call; 32])
        .start()
        .await;
    Live::with_fake(fake, POLICY).await
}

#[tokio::test]
async fn a_url_its_readers_disagree_on_is_refused_on_every_surface() {
    let live = Live::with_fake(FakeOllama::builder().start().await, POLICY).await;
    let good = emulated(
        "fetch_url",
        json!({"url": "https://api.example.com/v1/items"}),
    );
    passed(&everywhere(&live, "tool-json", &good).await, "fetch_url");
    for url in [
        "http://api.example.com\\@127.0.0.1/",
        "https://api.example.com\\@evil.com/",
        "http:api.example.com/",
    ] {
        let bad = emulated("fetch_url", json!({"url": url}));
        let answers = everywhere(&live, "tool-json", &bad).await;
        refused(&answers, "fetch_url", url.split('@').next_back().unwrap());
        let whole = &answers[0];
        assert!(whole.3.contains("disagree"), "{url}: {}", whole.3);
    }
}

#[tokio::test]
async fn arguments_written_as_lenient_json_are_judged_as_clients_read_them() {
    // Python's json.loads reads each of these; the guard reads what it reads.
    for (tool, arguments, secret) in [
        (
            "fetch_url",
            r#"{"url": "http://169.254.169.254/latest/meta-data/", "timeout": NaN}"#,
            "169.254.169.254",
        ),
        (
            "fetch_url",
            r#"{"url": "http://evil.example/\ud800", "retries": Infinity}"#,
            "evil.example",
        ),
        (
            "give_item",
            r#"{"qty": 1e400, "note": "secret-qty"}"#,
            "secret-qty",
        ),
    ] {
        let live = native(tool, json!(arguments)).await;
        let answers = everywhere(&live, "native", "Go").await;
        refused(&answers, tool, secret);
    }
    let live = native("give_item", json!(r#"{"qty": -Infinity}"#)).await;
    let answers = everywhere(&live, "native", "Go").await;
    let (_, _, status, body) = &answers[0];
    assert_eq!(*status, 200, "within the bound: judged, and passed: {body}");
    assert!(body.contains("give_item"), "{body}");
}

#[tokio::test]
async fn arguments_no_reader_reads_alike_are_refused() {
    for arguments in [
        r#"{"url": "https://api.example.com/", "url": "http://secret-host/"}"#,
        r#"{'url': 'http://secret-host/'}"#,
        r#"{"url": "http://secret-host/",}"#,
    ] {
        let live = native("fetch_url", json!(arguments)).await;
        let answers = everywhere(&live, "native", "Go").await;
        refused(&answers, "fetch_url", "secret-host");
        let whole = &answers[0];
        assert!(
            whole.3.contains("not JSON its readers agree on"),
            "{}",
            whole.3
        );
    }
    // Go's and .NET's readers take `URL` for `url`.
    let live = native(
        "fetch_url",
        json!({"url": "https://api.example.com/", "URL": "http://secret-host/"}),
    )
    .await;
    refused(
        &everywhere(&live, "native", "Go").await,
        "fetch_url",
        "secret-host",
    );
    let good = r#"{"url": "https://api.example.com/v1"}"#;
    let live = native("fetch_url", json!(good)).await;
    let answers = everywhere(&live, "native", "Go").await;
    passed(&answers, "fetch_url");
}

#[tokio::test]
async fn values_past_the_guards_bound_refuse_the_call() {
    let public = |n: usize| vec![json!("https://example.com/"); n];
    let live = native("fetch_all", json!({"urls": public(1024)})).await;
    passed(&everywhere(&live, "native", "Go").await, "fetch_all");
    for at in [1024, 5000] {
        let mut urls = public(at);
        urls.push(json!("http://169.254.169.254/"));
        let live = native("fetch_all", json!({"urls": urls})).await;
        let answers = everywhere(&live, "native", "Go").await;
        refused(&answers, "fetch_all", "169.254.169.254");
    }
    // Under the `*` keys of an object.
    let mut urls = serde_json::Map::new();
    for i in 0..1100 {
        urls.insert(format!("k{i}"), json!("https://example.com/"));
    }
    urls.insert("last".into(), json!("http://169.254.169.254/"));
    let live = native("fetch_all", json!({"urls": urls})).await;
    let answers = everywhere(&live, "native", "Go").await;
    refused(&answers, "fetch_all", "169.254.169.254");
}
