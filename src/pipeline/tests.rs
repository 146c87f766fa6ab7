//! Unit tests of the pipeline's pure stages: deciding what to change,
//! preparing the upstream body, interpreting the model's text, and
//! shaping a whole answer into the chunks a stream would have carried.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{
    attempt::interpret::interpret,
    chunk::chunks_of,
    delivery_for, is_load_request,
    job::{Delivery, Expect},
    plan::{self, Route},
    prepare,
};
use crate::{
    policy::{EmulateTools, ModelPolicy},
    upstream::{Fleet, capabilities::Capabilities},
    validate::Validators,
};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// Capabilities that are never looked up (policies below decide alone);
/// a lookup would fail against this closed port.
fn no_lookups() -> Capabilities {
    let config = crate::config::Config {
        upstreams: vec![crate::config::UpstreamSpec::from_url("http://127.0.0.1:9").unwrap()],
        connect_timeout: Duration::from_millis(50),
        first_byte_timeout: Duration::from_millis(50),
        idle_timeout: Duration::from_millis(50),
        ..crate::config::Config::default()
    };
    Capabilities::new(Fleet::new(&config).unwrap(), Duration::from_secs(1))
}

fn policy(emulate: EmulateTools) -> ModelPolicy {
    ModelPolicy {
        emulate_tools: emulate,
        ..ModelPolicy::default()
    }
}

fn weather() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}}}])
}

async fn decide(body: &Value, p: &ModelPolicy) -> plan::Plan {
    plan::decide(
        Route::Chat,
        &object(body.clone()),
        "m",
        p,
        (&no_lookups(), 0),
        true,
        plan::Readers::default(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_plain_request_changes_nothing() {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let plan = decide(&body, &policy(EmulateTools::Always)).await;
    assert!(plan.is_passthrough());
    assert_eq!(delivery_for(&plan), Delivery::Pass);
}

#[tokio::test]
async fn tools_are_emulated_when_the_policy_says_so() {
    let body = json!({"model": "m", "messages": [], "tools": weather(), "stream": false});
    let plan = decide(&body, &policy(EmulateTools::Always)).await;
    assert!(plan.tools.is_some() && plan.validate && !plan.stream);
    assert_eq!(delivery_for(&plan), Delivery::Whole);
    let never = decide(&body, &policy(EmulateTools::Never)).await;
    assert!(never.tools.is_none() && never.is_passthrough());
    // tool_choice "none" removes the tools instead.
    let mut none = body.clone();
    none["tool_choice"] = json!("none");
    let plan = decide(&none, &policy(EmulateTools::Always)).await;
    assert!(plan.tools.is_none() && plan.strip_tools && !plan.is_passthrough());
}

#[tokio::test]
async fn formats_are_normalized_and_refused_early() {
    let p = policy(EmulateTools::Never);
    let plan = decide(&json!({"model": "m", "format": {"type": "json"}}), &p).await;
    assert!(plan.format_changed && plan.validate);
    assert_eq!(delivery_for(&plan), Delivery::Pass);
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let plan = decide(&json!({"model": "m", "format": schema}), &p).await;
    assert_eq!(delivery_for(&plan), Delivery::Buffered, "schemas are held");
    let err = plan::decide(
        Route::Chat,
        &object(json!({"model": "m", "format": "yaml"})),
        "m",
        &p,
        (&no_lookups(), 0),
        true,
        plan::Readers::default(),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(err.status(), 400);
}

#[tokio::test]
async fn prepared_bodies_carry_the_envelope_and_the_instruction() {
    let body = json!({"model": "m", "stream": false, "tools": weather(), "tool_choice": "required",
        "messages": [{"role": "user", "content": "Weather in Paris?"}]});
    let plan = decide(&body, &policy(EmulateTools::Always)).await;
    let (sent, expect) = prepare::prepare(Route::Chat, &object(body), plan, 1 << 20).unwrap();
    assert!(!sent.contains_key("tools") && !sent.contains_key("tool_choice"));
    let format = sent["format"].to_string();
    assert!(format.contains("get_weather"), "{format}");
    assert!(
        !format.contains("\"response\""),
        "required: no answer branch"
    );
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(matches!(expect, Expect::Tools { .. }));
    // The format sent upstream is capped.
    let body = json!({"model": "m", "stream": false, "tools": weather(),
        "messages": [{"role": "user", "content": "x"}]});
    let plan = decide(&body, &policy(EmulateTools::Always)).await;
    let err = prepare::prepare(Route::Chat, &object(body), plan, 64)
        .err()
        .unwrap();
    assert_eq!(err.status(), 400);
}

#[test]
fn interpreting_repairs_validates_and_splits_calls() {
    let v = Validators::shared();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "required": ["n"]});
    let i = interpret(
        "```json\n{\"n\": \"5\",}\n```",
        &Expect::Schema(schema.clone()),
        v,
        true,
    );
    assert!(i.violations.is_empty(), "{:?}", i.violations);
    assert_eq!(i.content, r#"{"n":5}"#);
    assert!(!i.repairs.is_empty());
    let i = interpret(r#"{"m": 1}"#, &Expect::Schema(schema), v, true);
    assert!(!i.violations.is_empty());
    let i = interpret("not json", &Expect::Text, v, true);
    assert_eq!(i.content, "not json");
}

#[test]
fn a_whole_answer_becomes_the_chunks_a_stream_carries() {
    let whole = json!({"model": "m", "created_at": "t", "done": true, "done_reason": "stop",
        "message": {"role": "assistant", "content": "", "thinking": "hmm",
            "tool_calls": [{"id": "call_1", "function": {"index": 0, "name": "f", "arguments": {}}}]},
        "eval_count": 3});
    let chunks = chunks_of(Route::Chat, &whole);
    assert_eq!(
        chunks.len(),
        3,
        "thinking, the call, the done chunk: {chunks:?}"
    );
    assert_eq!(chunks[0]["message"]["thinking"], "hmm");
    assert_eq!(chunks[1]["message"]["tool_calls"][0]["id"], "call_1");
    assert_eq!(chunks[1]["done"], false);
    assert_eq!(chunks[2]["done"], true);
    assert_eq!(chunks[2]["eval_count"], 3);
    assert_eq!(chunks[2]["message"]["content"], "");
    let whole = json!({"model": "m", "done": true, "response": "hello", "eval_count": 1});
    let chunks = chunks_of(Route::Generate, &whole);
    assert_eq!(chunks[0]["response"], "hello");
    assert_eq!(chunks[1]["response"], "");
}

#[test]
fn empty_conversations_only_load_the_model() {
    assert!(is_load_request(Route::Chat, &object(json!({"model": "m"}))));
    assert!(is_load_request(
        Route::Chat,
        &object(json!({"messages": []}))
    ));
    assert!(is_load_request(
        Route::Generate,
        &object(json!({"prompt": ""}))
    ));
    assert!(!is_load_request(
        Route::Chat,
        &object(json!({"messages": [{"role": "user", "content": "x"}]}))
    ));
}
