//! Tests of the `format` envelope ([`super::build_format`]).

use super::*;
use crate::tools::ToolSet;
use crate::tools::testutil::tools;
use serde_json::{Value, json};

fn valid(schema: &Value, instance: &Value) -> bool {
    jsonschema::validator_for(schema)
        .unwrap()
        .is_valid(instance)
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

#[test]
fn every_size_choice_and_mode_admits_exactly_the_right_shapes() {
    for n in [1usize, 3, 20] {
        let set = tools(n);
        let choices = [
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::Named("get_weather".into()),
            ToolChoice::None,
        ];
        for choice in &choices {
            for parallel in [false, true] {
                let f = build_format(&set, choice, parallel, None);
                let ctx = format!("n={n} choice={choice:?} parallel={parallel}");
                let good = call("get_weather", json!({"city":"Tokyo"}));
                let bad_name = call("launch_rockets", json!({"city":"Tokyo"}));
                let bad_args = call("get_weather", json!({"town":"Tokyo"}));
                let answer = json!({"response":"hello"});
                let wrap = |c: Value| {
                    if parallel {
                        json!({"tool_calls":[c]})
                    } else {
                        json!({"tool_call":c})
                    }
                };
                let calls_ok = choice.emulates();
                assert_eq!(valid(&f, &wrap(good.clone())), calls_ok, "{ctx}");
                assert!(!valid(&f, &wrap(bad_name)), "{ctx}");
                assert!(!valid(&f, &wrap(bad_args)), "{ctx}");
                assert_eq!(valid(&f, &answer), choice.allows_answer(), "{ctx}");
                assert!(!valid(&f, &json!({"response": 5})), "{ctx}");
                assert!(!valid(&f, &json!({})), "{ctx}");
                // The other mode's key is never admitted.
                let other = if parallel {
                    json!({"tool_call": good.clone()})
                } else {
                    json!({"tool_calls": [good.clone()]})
                };
                assert!(!valid(&f, &other), "{ctx}");
                if n > 1 && calls_ok {
                    let second = call("tool_1", json!({"n": 3}));
                    let named = matches!(choice, ToolChoice::Named(_));
                    assert_eq!(valid(&f, &wrap(second)), !named, "{ctx}");
                }
                if parallel && calls_ok {
                    let many = |k: usize| json!({"tool_calls": vec![good.clone(); k]});
                    assert!(valid(&f, &many(MAX_PARALLEL_CALLS)), "{ctx}");
                    assert!(!valid(&f, &many(MAX_PARALLEL_CALLS + 1)), "{ctx}");
                    assert!(!valid(&f, &many(0)), "{ctx}");
                }
            }
        }
    }
}

#[test]
fn envelope_key_comes_first_and_branch_order_is_calls_then_answer() {
    let f = build_format(&tools(3), &ToolChoice::Auto, false, None);
    let any = f["anyOf"].as_array().unwrap();
    assert_eq!(any.len(), 2);
    let first_key = |v: &Value| v["properties"].as_object().unwrap().keys().next().cloned();
    assert_eq!(first_key(&any[0]).as_deref(), Some(KEY_CALL));
    assert_eq!(first_key(&any[1]).as_deref(), Some(KEY_RESPONSE));
    let p = &any[0]["properties"]["tool_call"]["anyOf"][0];
    let keys: Vec<_> = p["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "arguments"]);
}

#[test]
fn single_tool_has_no_anyof_and_required_has_no_answer() {
    let f = build_format(&tools(1), &ToolChoice::Required, false, None);
    assert_eq!(
        f,
        json!({"type":"object","properties":{"tool_call":{"type":"object","properties":{
            "name":{"type":"string","const":"get_weather"},
            "arguments":{"type":"object","properties":{
                "city":{"type":"string","description":"City name"},
                "unit":{"enum":["celsius","fahrenheit"]}},"required":["city"]}},
            "required":["name","arguments"]}},"required":["tool_call"]})
    );
}

#[test]
fn client_format_becomes_the_answer_schema() {
    let set = tools(3);
    let schema =
        json!({"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]});
    let f = build_format(&set, &ToolChoice::Auto, false, Some(&schema));
    assert!(valid(&f, &json!({"response":{"temp": 21.5}})));
    assert!(!valid(&f, &json!({"response":"21.5"})));
    let f = build_format(&set, &ToolChoice::Auto, false, Some(&json!("json")));
    assert!(valid(&f, &json!({"response":{"any":"thing"}})));
    let f = build_format(&set, &ToolChoice::Auto, false, Some(&json!("")));
    assert!(valid(&f, &json!({"response":"text"})));
}

#[test]
fn odd_parameter_schemas_never_fail() {
    let raw: Vec<Value> = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tools/odd_tools.json"
    )))
    .unwrap();
    let mut tools = raw.clone();
    let huge: Vec<String> = (0..5000).map(|i| format!("value_{i}")).collect();
    tools.push(json!({"type":"function","function":{"name":"huge_enum",
        "parameters":{"type":"object","properties":{"v":{"type":"string","enum":huge}}}}}));
    let set = ToolSet::from_request(&tools).unwrap();
    assert_eq!(set.len(), raw.len() + 1);
    for choice in [ToolChoice::Auto, ToolChoice::Required] {
        for parallel in [false, true] {
            let f = build_format(&set, &choice, parallel, None);
            // The envelope itself must always compile.
            let v = jsonschema::validator_for(&f).unwrap();
            let c = json!({"name":"no_params","arguments":{}});
            let inst = if parallel {
                json!({"tool_calls":[c]})
            } else {
                json!({"tool_call":c})
            };
            assert!(v.is_valid(&inst));
        }
    }
    for t in set.tools() {
        assert!(t.grammar.is_object(), "{}", t.name);
    }
}

#[test]
fn build_format_for_20_tools_is_cheap() {
    let set = tools(20);
    let start = std::time::Instant::now();
    for _ in 0..200 {
        let f = build_format(&set, &ToolChoice::Auto, true, None);
        assert!(f.is_object());
    }
    // 200 builds in well under a second even unoptimised.
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
}
