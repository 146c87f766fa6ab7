//! Caches as a weapon: thousands of distinct schemas and tool sets, each
//! compiled and kept, must not grow the process past the cache budget.

use fake_ollama::FakeOllama;
use serde_json::{Map, Value, json};

use crate::common::process::{Process, measure};
use crate::schemas::{MB, chat, post, start};

/// A ~11 KB schema, distinct per `i`: strings with patterns, numbers with
/// bounds, enums, nested objects.
fn distinct_schema(i: usize) -> Value {
    let mut props = Map::new();
    let mut n = 0;
    while Value::Object(props.clone()).to_string().len() < 11_000 {
        let p = match n % 4 {
            0 => json!({"type": "string", "pattern": format!("^[a-z]{{1,{}}}$", 40 + n)}),
            1 => json!({"type": "integer", "minimum": i, "maximum": i + n}),
            2 => json!({"enum": [format!("a{i}"), format!("b{n}"), "c"]}),
            _ => json!({"type": "object", "properties": {"x": {"type": "string", "maxLength": 20}},
                "required": ["x"], "description": format!("field {n} of schema {i}")}),
        };
        props.insert(format!("f{n}_{i}"), p);
        n += 1;
    }
    json!({"type": "object", "properties": props})
}

/// A set of ten tools, distinct per `i`, about 10 KB in all.
fn distinct_tools(i: usize) -> Vec<Value> {
    (0..10)
        .map(|t| {
            let props: Map<String, Value> = (0..12)
                .map(|k| {
                    (format!("arg{k}_{i}"), json!({"type": "string", "description": format!("argument {k} of tool {t} in set {i}"),
                        "pattern": format!("^[a-z0-9]{{1,{}}}$", 10 + k)}))
                })
                .collect();
            json!({"type": "function", "function": {"name": format!("tool_{t}_{i}"),
                "description": "does a thing", "parameters": {"type": "object", "properties": props}}})
        })
        .collect()
}

/// Send `count` requests made by `body`, four at a time.
async fn send_all(p: &Process, count: usize, body: impl Fn(usize) -> Value) -> Vec<u16> {
    let mut statuses = Vec::new();
    for start in (0..count).step_by(4) {
        let batch = (start..(start + 4).min(count)).map(|i| {
            let b = body(i);
            async move { post(p, "/api/chat", &b).await.0 }
        });
        statuses.extend(futures_util::future::join_all(batch).await);
    }
    statuses
}

#[tokio::test]
async fn distinct_schemas_and_tool_sets_stay_within_the_cache_budget() {
    let fake = FakeOllama::builder().start().await;
    let p = start(&fake, None).await;
    // Warm up with the shapes used below.
    send_all(&p, 8, |i| chat(&distinct_schema(100_000 + i))).await;
    let budget = 32 * MB;
    let (statuses, cost) = measure(&p, send_all(&p, 1200, |i| chat(&distinct_schema(i)))).await;
    assert!(statuses.iter().all(|s| *s < 500), "{statuses:?}");
    eprintln!(
        "1200 schemas: {:?} CPU, RSS +{} MiB",
        cost.cpu,
        cost.rss_growth / MB
    );
    assert!(
        cost.rss_growth < budget + 64 * MB,
        "RSS grew {} MiB",
        cost.rss_growth / MB
    );

    let tools = |i: usize| {
        json!({"model": "gemma3", "stream": false, "tools": distinct_tools(i),
            "messages": [{"role": "user", "content": "hi"}]})
    };
    send_all(&p, 8, |i| tools(100_000 + i)).await;
    let (statuses, cost) = measure(&p, send_all(&p, 400, tools)).await;
    assert!(statuses.iter().all(|s| *s < 500), "{statuses:?}");
    eprintln!(
        "400 tool sets: {:?} CPU, RSS +{} MiB",
        cost.cpu,
        cost.rss_growth / MB
    );
    assert!(
        cost.rss_growth < budget + 64 * MB,
        "RSS grew {} MiB",
        cost.rss_growth / MB
    );
}
