//! Unit tests of `offers`.

use super::*;
use crate::tools::spec::ToolSet;
use serde_json::json;

fn set(params: Value) -> ToolSet {
    let tool = json!({"type": "function", "function": {"name": "t", "parameters": params}});
    ToolSet::from_request(&[tool]).unwrap()
}

fn strings() -> ToolSet {
    set(json!({"type": "object", "properties": {"city": {"type": "string"}}}))
}

fn numbers() -> ToolSet {
    set(json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}))
}

#[test]
fn bare_questions_offer_nothing() {
    for q in [
        "Hi there! How are you?",
        "Thanks, that's all I needed!",
        "Write a haiku about autumn leaves.",
        "Can you explain what a noun is? I'd like to know.",
        "",
    ] {
        assert!(!offers_values(strings().tools(), q), "{q}");
    }
}

#[test]
fn names_quotes_ids_and_addresses_are_values() {
    for q in [
        "How many people live in Japan?",
        "Who wrote Romeo and Juliet?",
        "What is AAPL at?",
        "Spell the word \"banana\" backwards.",
        "Where is 1Z999AA10123456784 now?",
        "Remind me on 2025-12-24 at 18:00.",
        "ping example.com please",
        "mail bob@example.org",
        "open /etc/hosts",
    ] {
        assert!(offers_values(strings().tools(), q), "{q}");
    }
}

#[test]
fn a_bare_number_is_a_value_only_for_a_tool_taking_numbers() {
    assert!(!offers_values(strings().tools(), "What is 2 + 2?"));
    assert!(offers_values(numbers().tools(), "What is 2 + 2?"));
    assert!(offers_values(numbers().tools(), "How far is 26.2 miles?"));
}

#[test]
fn deep_schemas_are_bounded() {
    let mut schema = json!({"type": "string"});
    for _ in 0..120 {
        schema = json!({"type": "object", "properties": {"x": schema}});
    }
    assert!(takes_a_number(&schema), "past the budget, as if numeric");
    assert!(!takes_a_number(&json!({"type": "object"})));
}
