use serde_json::{Map, Value, json};

use super::{
    Cause, Retry,
    bound::{self, Bound},
    cut::{self, Part, Step},
    excerpt::{self, EXCERPT_MAX, Problem},
    fit::{self, Turn},
};
use crate::{pipeline::plan::Route, upstream::capabilities::ModelContext};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn key(k: &str) -> Step {
    Step::Key {
        key: k.into(),
        siblings: Vec::new(),
    }
}

fn looping_array(n: usize) -> String {
    let items = vec![r#""same""#; n].join(",");
    format!(r#"{{"tool_call":{{"name":"tag","arguments":{{"tags":[{items},"sa"#)
}

#[test]
fn a_cut_inside_a_looping_array_is_a_runaway() {
    let text = looping_array(100);
    let c = cut::analyze(&text).unwrap();
    assert!(c.in_string);
    assert_eq!(c.path.len(), 4);
    let r = c.runaway.unwrap();
    assert_eq!(r.part, Part::Array { items: 100 });
    assert_eq!(r.pointer(), "/tool_call/arguments/tags");
    assert_eq!(
        r.path[1],
        Step::Key {
            key: "arguments".into(),
            siblings: vec![("name".into(), "tag".into())]
        }
    );
}

#[test]
fn a_cut_inside_a_looping_string_is_a_runaway() {
    let text = format!(r#"{{"response":{{"note":"{}"#, "la la ".repeat(200));
    let r = cut::analyze(&text).unwrap().runaway.unwrap();
    assert_eq!(r.part, Part::Text { chars: 1200 });
    assert_eq!(r.pointer(), "/response/note");
}

#[test]
fn a_short_string_ending_in_a_run_is_a_runaway() {
    // What is left when Ollama ends an answer for repeating a token.
    let head =
        r#"{"tool_calls":[{"name":"create_event","arguments":{"title":"Dentist","attendees":["#;
    let text = format!(r#"{head}"1{}.{}"#, "0".repeat(31), "0".repeat(31));
    let r = cut::analyze(&text).unwrap().runaway.unwrap();
    assert_eq!(r.pointer(), "/tool_calls/0/arguments/attendees/0");
    assert_eq!(r.part, Part::Text { chars: 64 });
    assert!(cut::ends_in_a_run(&"ab".repeat(30)));
    assert!(!cut::ends_in_a_run(&"ab".repeat(29)));
    assert!(!cut::ends_in_a_run(
        "the quick brown fox jumps over the lazy dog"
    ));
    // A short string without a run is not one.
    let healthy = format!(r#"{head}"bob@example"#);
    assert!(cut::analyze(&healthy).unwrap().runaway.is_none());
}

#[test]
fn a_long_healthy_answer_has_no_runaway() {
    // Varied text: a long answer, not a loop.
    let words: String = (0..400)
        .map(|i| format!("w{}x{} ", i * 7919 % 1000, i))
        .collect();
    let text = format!(r#"{{"a":"{words}"#);
    let c = cut::analyze(&text).unwrap();
    assert!(c.in_string && c.runaway.is_none(), "{c:?}");
    // Many small members: no part takes most of the answer.
    let members: String = (0..200).map(|i| format!(r#""k{i}":"v","#)).collect();
    let c = cut::analyze(&format!("{{{members}\"last\":\"x")).unwrap();
    assert!(c.runaway.is_none());
    // Short answers never run away; complete ones are not cut.
    assert!(cut::analyze(r#"{"a":[1,1,1"#).unwrap().runaway.is_none());
    assert_eq!(cut::analyze(r#"{"a":[1]}"#), None);
    assert_eq!(cut::analyze("no json"), None);
}

#[test]
fn bounds_go_where_the_path_leads_and_only_there() {
    let tool = |name: &str| {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "const": name},
            "arguments": {"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string"}
            }}
        }})
    };
    let mut grammar = json!({"anyOf": [
        {"type": "object", "properties": {"tool_call": {"anyOf": [tool("other"), tool("tag")]}}},
        {"type": "object", "properties": {"response": {"type": "string"}}}
    ]});
    let r = cut::analyze(&looping_array(100)).unwrap().runaway.unwrap();
    let b = bound::apply(&mut grammar, &r).unwrap();
    assert_eq!((b.keyword, b.value, b.seen), ("maxItems", 50, 100));
    let tags = |g: &Value, i: usize| {
        g.pointer(&format!(
            "/anyOf/0/properties/tool_call/anyOf/{i}/properties/arguments/properties/tags"
        ))
        .cloned()
        .unwrap()
    };
    assert_eq!(tags(&grammar, 1)["maxItems"], 50);
    assert!(tags(&grammar, 0).get("maxItems").is_none(), "other tool");

    // Strings get maxLength, capped; a tighter bound already there stays.
    let mut s = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let text = format!(r#"{{"a":"{}"#, "ab".repeat(2000));
    let r = cut::analyze(&text).unwrap().runaway.unwrap();
    assert_eq!(
        bound::apply(&mut s, &r).unwrap().value,
        bound::MAX_LENGTH_BOUND
    );
    assert_eq!(s["properties"]["a"]["maxLength"], bound::MAX_LENGTH_BOUND);
    assert_eq!(bound::apply(&mut s, &r), None);
    // A pattern or format is the converter's rule: a maxLength beside it
    // would change nothing.
    for rule in [
        json!({"pattern": "^[0-9.]{1,24}$"}),
        json!({"format": "date"}),
    ] {
        let mut p = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        p["properties"]["a"]
            .as_object_mut()
            .unwrap()
            .extend(rule.as_object().unwrap().clone());
        assert_eq!(bound::apply(&mut p, &r), None, "{p}");
        assert!(p["properties"]["a"].get("maxLength").is_none());
    }
    // A minimum above what was produced leaves nothing to bound.
    let mut m = json!({"type": "array", "minItems": 200, "items": {"type": "integer"}});
    let r = cut::Runaway {
        path: vec![],
        part: Part::Array { items: 100 },
    };
    assert_eq!(bound::apply(&mut m, &r), None);
    assert_eq!(Bound::of(Part::Array { items: 0 }), None);
    assert_eq!(Bound::of(Part::Array { items: 1 }).unwrap().value, 1);
    // No sub-schema on the path: nothing applied.
    let mut other = json!({"type": "object", "properties": {"b": {"type": "array"}}});
    let r = cut::Runaway {
        path: vec![key("a")],
        part: Part::Array { items: 10 },
    };
    assert_eq!(bound::apply(&mut other, &r), None);
}

#[test]
fn excerpts_are_bounded_and_show_the_problem() {
    let long = format!("{}{}END", "a".repeat(5000), "é".repeat(3000));
    let e = excerpt::excerpt(&long, Problem::End, EXCERPT_MAX);
    assert!(e.len() <= EXCERPT_MAX, "{}", e.len());
    assert!(e.starts_with("aaaa") && e.ends_with("éEND"), "{e}");
    assert!(e.contains(" … "));
    let text = format!(
        r#"{{"x":"{}","age":"five","y":"{}"}}"#,
        "p".repeat(3000),
        "q".repeat(3000)
    );
    let at = excerpt::locate(&text, "/age");
    let e = excerpt::excerpt(&text, at, 512);
    assert!(e.len() <= 512 && e.contains(r#""age":"five""#), "{e}");
    assert_eq!(excerpt::excerpt("short", Problem::End, 10), "short");
    assert_eq!(excerpt::locate("{}", "/0"), Problem::At(0));
}

fn turn(excerpt_len: usize) -> Turn {
    Turn {
        excerpts: vec!["x".repeat(excerpt_len), "x".repeat(excerpt_len / 4)],
        lead: "Your previous answer was invalid".into(),
        detail: Some("/a: wrong".into()),
        instruction: "Answer again.".into(),
    }
}

fn chat(content_len: usize, options: Value) -> Map<String, Value> {
    object(json!({"model": "m", "options": options, "messages": [
        {"role": "system", "content": "augur instruction"},
        {"role": "user", "content": "q".repeat(content_len)}
    ]}))
}

fn messages(body: &Map<String, Value>) -> Vec<Value> {
    body["messages"].as_array().unwrap().clone()
}

#[test]
fn feedback_fits_the_context_and_the_request_stays_whole() {
    let base = chat(100, json!({}));
    // No limit known, or room enough: everything.
    let all = fit::compose(Route::Chat, &base, &[turn(900), turn(1000)], None);
    assert_eq!(messages(&all).len(), 6);
    let roomy = fit::compose(Route::Chat, &base, &[turn(900), turn(1000)], Some(4096));
    assert_eq!(roomy, all);
    // Tight: the older turn goes, then the excerpt shrinks, then goes.
    let one = fit::compose(Route::Chat, &base, &[turn(900), turn(1000)], Some(800));
    let m = messages(&one);
    assert_eq!(m.len(), 4, "{m:?}");
    assert_eq!(m[2]["content"].as_str().unwrap().len(), 1000);
    let shorter = fit::compose(Route::Chat, &base, &[turn(900), turn(1000)], Some(400));
    assert_eq!(
        messages(&shorter)[2]["content"].as_str().unwrap().len(),
        250
    );
    let bare = fit::compose(Route::Chat, &base, &[turn(1000)], Some(200));
    let m = messages(&bare);
    assert_eq!(m.len(), 3);
    assert_eq!(
        m[2]["content"],
        "Your previous answer was invalid: /a: wrong. Answer again."
    );
    // Nothing fits: the request and the instruction still go.
    let big = chat(9000, json!({}));
    let m = messages(&fit::compose(Route::Chat, &big, &[turn(1000)], Some(1000)));
    assert_eq!(m.len(), 3);
    assert_eq!(m[0]["content"], "augur instruction");
    assert_eq!(m[1]["content"].as_str().unwrap().len(), 9000);
    assert_eq!(
        m[2]["content"],
        "Your previous answer was invalid. Answer again."
    );
    // Generate: the feedback goes into the prompt.
    let g = object(json!({"model": "m", "prompt": "Who?"}));
    let out = fit::compose(Route::Generate, &g, &[turn(10)], Some(4096));
    assert_eq!(
        out["prompt"],
        "Who?\n\nYour previous answer was invalid: /a: wrong. Answer again."
    );
}

#[test]
fn the_context_and_the_prompt_budget_come_from_options_and_show() {
    let shown = ModelContext {
        context_length: Some(131_072),
        num_ctx: None,
    };
    let opts = object(json!({"num_ctx": 2048, "num_predict": 100}));
    assert_eq!(fit::context_of(Some(&shown), Some(&opts)), 2048);
    assert_eq!(fit::context_of(Some(&shown), None), fit::DEFAULT_NUM_CTX);
    let small = ModelContext {
        context_length: Some(2048),
        num_ctx: None,
    };
    assert_eq!(fit::context_of(Some(&small), None), 2048);
    let modelfile = ModelContext {
        context_length: Some(131_072),
        num_ctx: Some(8192),
    };
    assert_eq!(fit::context_of(Some(&modelfile), None), 8192);
    assert_eq!(fit::context_of(None, None), fit::DEFAULT_NUM_CTX);
    assert_eq!(fit::prompt_budget(4096, Some(&opts)), 3996);
    assert_eq!(fit::prompt_budget(4096, None), 3072);
    let greedy = object(json!({"num_predict": 100_000}));
    assert_eq!(fit::prompt_budget(4096, Some(&greedy)), 2048);
    assert_eq!(fit::tokens(10), 4);
    // Images are not text.
    let with_image = object(json!({"messages": [{"role": "user", "content": "abc",
        "images": ["A".repeat(30_000)]}]}));
    assert_eq!(fit::body_tokens(Route::Chat, &with_image), 9);
}

#[test]
fn a_runaway_is_bounded_and_a_healthy_cut_gets_more_tokens() {
    let grammar = json!({"type": "object", "properties": {"tool_call": {"type": "object",
        "properties": {"name": {"type": "string", "const": "tag"}, "arguments": {"type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}}}}});
    let base = object(json!({"model": "m", "format": grammar,
        "messages": [{"role": "user", "content": "tag it"}], "options": {"num_predict": 300}}));
    let mut retry = Retry::new(Route::Chat, base.clone());
    let text = looping_array(1000);
    assert_eq!(retry.after(&text, &[], true), Cause::Runaway);
    let body = retry.body();
    let tags = "/format/properties/tool_call/properties/arguments/properties/tags/maxItems";
    assert_eq!(Value::Object(body.clone()).pointer(tags), Some(&json!(64)));
    assert_eq!(body["options"]["num_predict"], 300, "not raised");
    let m = messages(&body);
    assert!(m[1]["content"].as_str().unwrap().len() <= EXCERPT_MAX);
    let feedback = m[2]["content"].as_str().unwrap();
    assert!(
        feedback.contains("/tool_call/arguments/tags kept growing (1000 items")
            && feedback.contains("at most 64 items"),
        "{feedback}"
    );

    let mut retry = Retry::new(Route::Chat, base);
    assert_eq!(
        retry.after(r#"{"tool_call":{"na"#, &[], true),
        Cause::Truncated
    );
    assert_eq!(retry.body()["options"]["num_predict"], 600);
    assert!(retry.needs_context());
}

#[test]
fn a_cut_plain_answer_is_recovered_and_nothing_else_is() {
    use crate::pipeline::job::Expect;
    let v = crate::validate::Validators::shared();
    let tools = |think: bool| Expect::Tools {
        set: crate::tools::testutil::tools(1),
        answer_schema: None,
        json_answer: false,
        think,
        screen: Default::default(),
        text: None,
    };
    let i = crate::pipeline::attempt::plain::recover(
        r#"{"response":"It is sunny in Pa"#,
        &tools(false),
        v,
    )
    .unwrap();
    assert_eq!(
        (i.content.as_str(), i.thinking),
        ("It is sunny in Pa", None)
    );
    assert_eq!(
        crate::pipeline::attempt::plain::recover("{", &tools(false), v)
            .unwrap()
            .content,
        ""
    );
    let call = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Pa"#;
    assert!(crate::pipeline::attempt::plain::recover(call, &tools(false), v).is_none());
    assert!(
        crate::pipeline::attempt::plain::recover(r#"{"response":"done"}"#, &tools(false), v)
            .is_none()
    );
    let i = crate::pipeline::attempt::plain::recover(
        r#"{"reasoning":"sun","answer":{"response":"Sun"#,
        &tools(true),
        v,
    )
    .unwrap();
    assert_eq!(
        (i.content.as_str(), i.thinking.as_deref()),
        ("Sun", Some("sun"))
    );
    let think = Expect::Think {
        answer_schema: None,
        json_answer: false,
    };
    let i =
        crate::pipeline::attempt::plain::recover(r#"{"reasoning":"Let me th"#, &think, v).unwrap();
    assert_eq!(
        (i.content.as_str(), i.thinking.as_deref()),
        ("", Some("Let me th"))
    );
    let structured = Expect::Think {
        answer_schema: None,
        json_answer: true,
    };
    assert!(
        crate::pipeline::attempt::plain::recover(
            r#"{"reasoning":"x","answer":{"a"#,
            &structured,
            v
        )
        .is_none()
    );
    let schema = Expect::Schema(json!({"type": "object"}));
    assert!(crate::pipeline::attempt::plain::recover(r#"{"a":"b"#, &schema, v).is_none());
}
