//! The tool guard judges every call that leaves augur, whatever the other
//! policy keys that change a request's path say: tool emulation
//! (`auto`, `never`, `always`), `rescue_text_calls`, a `format`, and
//! validation on or off; with the guard on the model's policy or on the
//! caller's API key; on every surface, whole and streamed. A blocked call
//! never reaches the client, the calls beside it do, and the answer says
//! what the guard did (a header, or the stream's closing event).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client, events, header,
    live::{Live, sha256_hex},
    ndjson,
    surfaces::{self, Surface},
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const RULES: &str = "        rules:\n          - id: ssrf\n            tool: fetch_url\n            pointer: /url\n            url: {block_private: true}\n          - id: qty\n            tool: give_item\n            pointer: /qty\n            maximum: 10\n            action: flag\n";

const EMULATE: [&str; 3] = ["auto", "never", "always"];

/// One combination of the keys that change a request's path.
#[derive(Debug, Clone, Copy)]
struct Combo {
    emulate: &'static str,
    rescue: bool,
    validate: bool,
    /// The guard is the API key's, not the model's.
    on_key: bool,
}

impl Combo {
    fn all() -> Vec<Combo> {
        let mut out = Vec::new();
        for emulate in EMULATE {
            for rescue in [true, false] {
                for validate in [true, false] {
                    for on_key in [false, true] {
                        out.push(Combo {
                            emulate,
                            rescue,
                            validate,
                            on_key,
                        });
                    }
                }
            }
        }
        out
    }

    /// The model this combination's policy entry applies to (every one a
    /// tool-capable model on the fake).
    fn model(&self) -> String {
        format!(
            "g-{}-{}-{}-{}",
            self.emulate,
            if self.rescue { "rescue" } else { "norescue" },
            if self.validate { "valid" } else { "novalid" },
            if self.on_key { "key" } else { "model" }
        )
    }

    fn key(&self) -> &'static str {
        if self.on_key {
            "guarded-key"
        } else {
            "plain-key"
        }
    }

    /// The model's answer: `calls` as native tool calls, or as the
    /// envelope an emulated request's grammar asks for.
    fn reply(&self, calls: &Value) -> String {
        if self.emulate == "always" {
            json!({"tool_calls": calls}).to_string()
        } else {
            fake_ollama::tool_calls_reply(calls)
        }
    }
}

/// A policy with one model entry per combination: the model's guard
/// where the combination says so, else the guarded key's.
fn policy(combos: &[Combo]) -> String {
    let mut p = format!(
        "auth:\n  required: true\n  keys:\n    - id: plain\n      key_sha256: {}\n    - id: guarded\n      key_sha256: {}\n      guard:\n{}models:\n",
        sha256_hex("plain-key"),
        sha256_hex("guarded-key"),
        RULES
    );
    for c in combos {
        p.push_str(&format!(
            "  \"{}\":\n    emulate_tools: {}\n    validate: {{enabled: {}}}\n    tools:\n      rescue_text_calls: {}\n",
            c.model(),
            c.emulate,
            c.validate,
            c.rescue
        ));
        if !c.on_key {
            p.push_str("      guard:\n");
            p.push_str(RULES);
        }
    }
    p
}

fn tools() -> Vec<Value> {
    let tool = |name: &str, param: &str, kind: &str| {
        json!({"type": "function", "function": {"name": name, "description": format!("{name} tool"),
            "parameters": {"type": "object", "properties": {param: {"type": kind}}, "required": [param]}}})
    };
    vec![
        tool("fetch_url", "url", "string"),
        tool("give_item", "qty", "integer"),
    ]
}

/// `body` (a `surface` request) asking for JSON output.
fn with_json_format(surface: Surface, mut body: Value) -> Value {
    match surface {
        Surface::Ollama => body["format"] = json!("json"),
        Surface::OpenAi => body["response_format"] = json!({"type": "json_object"}),
        Surface::Responses => body["text"] = json!({"format": {"type": "json_object"}}),
        Surface::Anthropic => {
            body["output_config"] = json!({"format": {"type": "json_schema",
                "schema": {"type": "object"}}})
        }
    }
    body
}

/// What the guard reported on an answer: the `X-Augur-Guard` header of a
/// whole one, the closing event's `augur_guard` of a stream.
fn reported(surface: Surface, stream: bool, guard_header: Option<String>, text: &str) -> String {
    if !stream {
        return guard_header.unwrap_or_default();
    }
    let field = |v: &Value| {
        v.get("augur_guard")
            .and_then(Value::as_str)
            .map(String::from)
    };
    let found = match surface {
        Surface::Ollama => ndjson(text).iter().rev().find_map(field),
        Surface::OpenAi => text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find_map(|v| field(&v)),
        Surface::Responses | Surface::Anthropic => events(text).iter().find_map(|(_, v)| field(v)),
    };
    found.unwrap_or_default()
}

async fn ask(live: &Live, combo: Combo, surface: Surface, body: &Value) -> (u16, String, String) {
    let r = client()
        .post(live.url(surface.path()))
        .bearer_auth(combo.key())
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let mark = header(&r, "x-augur-guard").map(String::from);
    let text = r.text().await.unwrap();
    (status, mark.unwrap_or_default(), text)
}

/// Every combination of the path-changing keys, on every surface, whole
/// and streamed, with and without a `format`: the call to a metadata
/// address is withheld and reported, the public call beside it returned.
#[tokio::test]
async fn a_blocked_call_never_leaves_augur_whatever_the_path() {
    let combos = Combo::all();
    let mut fake = FakeOllama::builder();
    for c in &combos {
        fake = fake.script_tools(&c.model(), vec![]);
    }
    let live = Live::with_fake(fake.start().await, &policy(&combos)).await;
    let calls = json!([
        {"name": "fetch_url", "arguments": {"url": "http://169.254.169.254/latest/meta-data/"}},
        {"name": "fetch_url", "arguments": {"url": "https://example.com/"}}
    ]);
    let messages = [json!({"role": "user", "content": "Fetch both pages"})];
    let mut failures = Vec::new();
    for combo in &combos {
        for surface in Surface::ALL {
            for format in [false, true] {
                for stream in [false, true] {
                    let mut body =
                        surfaces::request(surface, &combo.model(), &tools(), &messages, stream);
                    if format {
                        body = with_json_format(surface, body);
                    }
                    live.fake
                        .push_script(&combo.model(), vec![combo.reply(&calls)]);
                    let (status, mark, text) = ask(&live, *combo, surface, &body).await;
                    let case = format!("{combo:?} {surface:?} format={format} stream={stream}");
                    if text.contains("169.254") {
                        failures.push(format!("{case}: the blocked call reached the client"));
                        continue;
                    }
                    if status != 200 {
                        failures.push(format!("{case}: status {status}: {text}"));
                        continue;
                    }
                    let answer = surfaces::answer(surface, stream, &text);
                    let kept = answer.as_ref().map(|a| a.calls.clone());
                    let want = vec![(
                        "fetch_url".to_string(),
                        json!({"url": "https://example.com/"}),
                    )];
                    if kept.as_ref() != Ok(&want) {
                        failures.push(format!("{case}: calls {kept:?}"));
                    }
                    if !reported(surface, stream, Some(mark), &text).contains("block:ssrf") {
                        failures.push(format!("{case}: the block is not reported: {text}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        combos.len() * 16,
        failures.join("\n")
    );
}

/// A flagged call goes out marked on every surface, whole (the header)
/// and streamed (the closing event's `augur_guard`).
#[tokio::test]
async fn a_flagged_call_is_marked_on_every_surface_whole_and_streamed() {
    let combo = Combo {
        emulate: "auto",
        rescue: true,
        validate: true,
        on_key: false,
    };
    let fake = FakeOllama::builder()
        .script_tools(&combo.model(), vec![])
        .start()
        .await;
    let live = Live::with_fake(fake, &policy(&[combo])).await;
    let calls = json!([{"name": "give_item", "arguments": {"qty": 500}}]);
    let messages = [json!({"role": "user", "content": "Give me 500"})];
    for surface in Surface::ALL {
        for stream in [false, true] {
            let body = surfaces::request(surface, &combo.model(), &tools(), &messages, stream);
            live.fake
                .push_script(&combo.model(), vec![combo.reply(&calls)]);
            let (status, mark, text) = ask(&live, combo, surface, &body).await;
            assert_eq!(status, 200, "{surface:?} stream={stream}: {text}");
            let answer = surfaces::answer(surface, stream, &text).unwrap();
            assert_eq!(
                answer.calls,
                vec![("give_item".to_string(), json!({"qty": 500}))],
                "{surface:?} stream={stream}"
            );
            assert_eq!(
                reported(surface, stream, Some(mark), &text),
                "flag:qty",
                "{surface:?} stream={stream}: {text}"
            );
        }
    }
}
