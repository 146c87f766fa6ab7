//! Schemas as a weapon: `$ref` fan-outs, huge nested `anyOf`s, thousands of
//! distinct schemas and tool sets, schemas that cannot be compiled.

use std::time::Duration;

use fake_ollama::FakeOllama;
use serde_json::{Map, Value, json};

use crate::common::process::{Process, Start, measure};
use crate::common::{client, start_with};

pub(crate) const MB: i64 = 1024 * 1024;

/// `levels` levels, each an `anyOf` of two `$ref`s to the next (2.6 KB at
/// 20 levels).
fn fan_out(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/L{}", i + 1);
        defs.insert(
            format!("L{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("L{levels}"), json!({"type": "string"}));
    json!({"$defs": defs, "$ref": "#/$defs/L0"})
}

pub(crate) async fn start(fake: &FakeOllama, config: Option<&str>) -> Process {
    Process::start(Start {
        upstream: &fake.url(),
        config,
        ..Start::default()
    })
    .await
}

/// POST `body` to `path`; (status, body text).
pub(crate) async fn post(p: &Process, path: &str, body: &Value) -> (u16, String) {
    let r = client()
        .post(format!("{}{path}", p.url))
        .json(body)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

pub(crate) fn chat(format: &Value) -> Value {
    json!({"model": "llama3.2", "stream": false, "format": format,
        "messages": [{"role": "user", "content": "hi"}]})
}

/// The same schema on every route that takes one.
fn every_route(schema: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("/api/chat", chat(schema)),
        (
            "/api/generate",
            json!({"model": "llama3.2", "stream": false, "format": schema, "prompt": "hi"}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}),
        ),
        (
            "/api/chat",
            json!({"model": "gemma3", "stream": false, "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "fan", "parameters": schema}}]}),
        ),
    ]
}

fn upstream_calls(fake: &FakeOllama) -> u64 {
    ["/api/chat", "/api/generate", "/v1/chat/completions"]
        .iter()
        .map(|p| fake.requests(p))
        .sum()
}

#[tokio::test]
async fn ref_fan_outs_are_refused_before_any_model_call_at_little_cost() {
    let fake = FakeOllama::builder().start().await;
    let p = start(&fake, None).await;
    // Warm up: the first request allocates what every request needs.
    let (status, _) = post(&p, "/api/chat", &chat(&json!({"type": "object"}))).await;
    assert_eq!(status, 200);
    let before = upstream_calls(&fake);
    for levels in [20, 40] {
        let schema = fan_out(levels);
        let (answers, cost) = measure(&p, async {
            let mut out = Vec::new();
            for (path, body) in every_route(&schema) {
                out.push((path, post(&p, path, &body).await));
            }
            out
        })
        .await;
        for (path, (status, text)) in answers {
            assert_eq!(status, 400, "{levels} levels on {path}: {text}");
            assert!(
                text.contains("schema too large: expands to more than 20000 sub-schemas (limit)"),
                "{levels} levels on {path}: {text}"
            );
        }
        eprintln!(
            "{levels} levels, 4 routes: {:?} CPU, RSS {:+} KiB",
            cost.cpu,
            cost.rss_growth / 1024
        );
        assert!(
            cost.cpu < Duration::from_secs(1),
            "{levels}: {:?}",
            cost.cpu
        );
        assert!(cost.rss_growth < 100 * MB, "{levels}: {}", cost.rss_growth);
    }
    assert_eq!(
        upstream_calls(&fake),
        before,
        "no model call for a refused schema"
    );
    let (status, text) = post(&p, "/api/chat", &every_route(&fan_out(20))[3].1).await;
    assert_eq!(status, 400);
    assert!(
        text.contains("tool \\\"fan\\\" parameters schema too large"),
        "{text}"
    );
}

#[tokio::test]
async fn two_hundred_tools_with_small_ref_fans_send_a_bounded_format() {
    let fake = FakeOllama::builder().start().await;
    let p = start(&fake, None).await;
    // Each tool: five levels, each a choice of two objects whose property
    // refers to the next level. 800 bytes, 32 distinct paths once inlined.
    let tool = |t: usize| {
        let mut defs = Map::new();
        for l in 0..5 {
            let next = format!("#/$defs/L{}", l + 1);
            defs.insert(
                format!("L{l}"),
                json!({"anyOf": [
                    {"type": "object", "properties": {"x": {"$ref": next}}},
                    {"type": "object", "properties": {"y": {"$ref": next}}}]}),
            );
        }
        defs.insert("L5".into(), json!({"type": "string", "maxLength": 8}));
        json!({"type": "function", "function": {"name": format!("t{t}"),
            "parameters": {"$defs": defs, "type": "object", "properties": {"a": {"$ref": "#/$defs/L0"}}}}})
    };
    let body = |n: usize| {
        json!({"model": "gemma3", "stream": false, "tools": (0..n).map(tool).collect::<Vec<_>>(),
            "messages": [{"role": "user", "content": "Run t0."}]})
    };
    assert!(body(200).to_string().len() < 200_000);
    // A few such tools fit: the format is sent.
    let (status, text) = post(&p, "/api/chat", &body(5)).await;
    assert_eq!(status, 200, "{text}");
    let ((status, text), cost) = measure(&p, post(&p, "/api/chat", &body(200))).await;
    eprintln!(
        "200 tools: {status} {text}; {:?} CPU, RSS {:+} KiB",
        cost.cpu,
        cost.rss_growth / 1024
    );
    // Inlined, the envelope would be about 770 KB.
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("format_limit_bytes (262144)"), "{text}");
    assert_eq!(fake.requests("/api/chat"), 1);
    assert!(cost.cpu < Duration::from_secs(5), "{:?}", cost.cpu);
    assert!(cost.rss_growth < 100 * MB, "{}", cost.rss_growth);
}

#[tokio::test]
async fn a_megabyte_of_nested_any_of_is_refused_cheaply() {
    let fake = FakeOllama::builder().start().await;
    let p = start(&fake, None).await;
    // About 30 levels of `anyOf`, each next to twenty objects of forty
    // properties.
    let mut schema = json!({"type": "string"});
    let mut level = 0;
    while schema.to_string().len() < 1_000_000 {
        let mut alts = vec![schema];
        for b in 0..20 {
            let filler: Map<String, Value> = (0..40)
                .map(|i| {
                    (
                        format!("k{level}_{b}_{i}"),
                        json!({"type": "integer", "minimum": i}),
                    )
                })
                .collect();
            alts.push(json!({"type": "object", "properties": filler}));
        }
        schema = json!({"anyOf": alts});
        level += 1;
    }
    assert!(level < 50, "{level} levels");
    post(&p, "/api/chat", &chat(&json!({"type": "object"}))).await;
    let before = upstream_calls(&fake);
    let (answers, cost) = measure(&p, async {
        let mut out = Vec::new();
        for (path, body) in every_route(&schema) {
            out.push((path, post(&p, path, &body).await));
        }
        out
    })
    .await;
    eprintln!(
        "1 MB nested anyOf, 4 routes: {:?} CPU, RSS {:+} KiB",
        cost.cpu,
        cost.rss_growth / 1024
    );
    for (path, (status, text)) in answers {
        assert_eq!(status, 400, "{path}: {text}");
        assert!(text.contains("(limit)"), "{path}: {text}");
    }
    assert_eq!(upstream_calls(&fake), before);
    assert!(cost.cpu < Duration::from_secs(2), "{:?}", cost.cpu);
    assert!(cost.rss_growth < 100 * MB, "{}", cost.rss_growth);
}

/// Unicode classes and `(?i)` under counted repetitions compile to far
/// more than their text suggests: 8 KB of `(?i)^[\p{L}' -]{1,14}…$`
/// patterns took 89 MB to compile (8 KB of `(?i)[\p{L}]{1,40}…`, 268 MB
/// and 2 s of CPU) when patterns were priced by their text. Priced by what they compile to, such a schema is refused as
/// over the budget like any other, before anything is compiled, and so is
/// one such pattern; a 500 KB pattern is judged in one pass (it took 32 s
/// when every unclosed `\p{` searched the rest of the pattern).
#[tokio::test]
async fn unicode_patterns_are_refused_by_what_they_compile_to() {
    let fake = FakeOllama::builder().start().await;
    let p = start(&fake, None).await;
    let mut names = Map::new();
    while Value::Object(names.clone()).to_string().len() < 8 * 1024 {
        let i = names.len();
        let pattern = format!("(?i)^[\\p{{L}}' -]{{1,14}}{i}$");
        names.insert(
            format!("name{i}"),
            json!({"type": "string", "pattern": pattern}),
        );
    }
    let one = |pattern: &str| json!({"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}});
    let cases = [
        (
            json!({"type": "object", "properties": names}),
            "format schema too complex: its patterns expand to more than 50000 automaton states (limit)",
        ),
        (
            one(r"^\p{L}{1,50}$"),
            "format schema too complex: the pattern at /properties/a expands to more than 10000 automaton states (limit)",
        ),
        (one(&r"\p{".repeat(170_000)), "invalid"),
    ];
    for (schema, expect) in &cases {
        let ((status, text), cost) = measure(&p, post(&p, "/api/chat", &chat(schema))).await;
        eprintln!(
            "{expect}: {status}; {:?} CPU, RSS {:+} KiB",
            cost.cpu,
            cost.rss_growth / 1024
        );
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(expect), "{text}");
        assert!(cost.cpu < Duration::from_secs(2), "{:?}", cost.cpu);
        assert!(cost.rss_growth < 50 * MB, "{}", cost.rss_growth);
    }
    assert_eq!(upstream_calls(&fake), 0);
}

#[tokio::test]
async fn schemas_that_cannot_be_compiled_are_refused_before_any_model_call() {
    // The answer violates every schema below; it must never come back as
    // a silent 200.
    let fake = FakeOllama::builder()
        .script("llama3.2", vec![r#"{"a": 1}"#.to_string(); 40])
        .start()
        .await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let schemas = [
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "a{1000000}"}}}),
            "pattern",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}),
            "invalid",
        ),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}),
            "resolves to nothing",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": {"not": "a type"}}}}),
            "invalid",
        ),
    ];
    for (schema, expect) in &schemas {
        for (path, body) in every_route(schema).into_iter().take(3) {
            let r = crate::common::post(&augur, path, &body).await;
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            assert_eq!(status, 400, "{schema} on {path}: {text}");
            assert!(text.contains(expect), "{schema} on {path}: {text}");
        }
    }
    assert_eq!(upstream_calls(&fake), 0);
    augur.stop().await;
}

#[tokio::test]
async fn a_tool_schema_that_cannot_be_compiled_is_refused_naming_the_tool() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    for (x, expect) in [
        (json!({"type": "string", "pattern": "("}), "invalid"),
        (json!({"$ref": "#/$defs/none"}), "resolves to nothing"),
    ] {
        let body = json!({"model": "gemma3", "stream": false,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "t", "parameters":
                {"type": "object", "properties": {"x": x}}}}]});
        let r = crate::common::post(&augur, "/api/chat", &body).await;
        assert_eq!(r.status(), 400);
        let text = r.text().await.unwrap();
        assert!(text.contains(r#"tool \"t\" parameters schema"#), "{text}");
        assert!(text.contains(expect), "{text}");
    }
    assert_eq!(fake.requests("/api/chat"), 0);
    augur.stop().await;
}

#[tokio::test]
async fn the_largest_fan_out_within_the_budget_checks_a_bad_answer_cheaply() {
    // 12 levels expand to about 8,000 sub-schemas: accepted. Every answer
    // violates it (an object where strings are wanted, which no repair
    // turns into one), so it is validated, repaired, retried and validated
    // again, with every violation collected.
    let fake = FakeOllama::builder()
        .script("llama3.2", vec![r#"{"a": 1}"#.to_string(); 10])
        .start()
        .await;
    let p = start(&fake, None).await;
    let schema = fan_out(12);
    let ((status, text), cost) = measure(&p, post(&p, "/api/chat", &chat(&schema))).await;
    eprintln!(
        "12 levels, bad answers: {status}; {:?} CPU, RSS {:+} KiB",
        cost.cpu,
        cost.rss_growth / 1024
    );
    assert_eq!(status, 422, "{text}");
    assert!(fake.requests("/api/chat") >= 2);
    assert!(cost.cpu < Duration::from_secs(1), "{:?}", cost.cpu);
    assert!(cost.rss_growth < 100 * MB, "{}", cost.rss_growth);
}

#[tokio::test]
async fn the_format_sent_upstream_is_capped() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |c| c.format_limit = 2048).await;
    let props: Map<String, Value> = (0..100)
        .map(|i| (format!("field_{i}"), json!({"type": "string"})))
        .collect();
    let schema = json!({"type": "object", "properties": props});
    let r = crate::common::post(&augur, "/api/chat", &chat(&schema)).await;
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("format too large") && text.contains("format_limit_bytes (2048)"),
        "{text}"
    );
    assert_eq!(fake.requests("/api/chat"), 0);
    let small = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let r = crate::common::post(&augur, "/api/chat", &chat(&small)).await;
    assert_eq!(r.status(), 200);
    augur.stop().await;
}
