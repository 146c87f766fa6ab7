use serde_json::{Value, json};

use super::*;

fn key(shape: Shape, body: Value) -> Option<u64> {
    prefix(shape, body.to_string().as_bytes())
}

const SYSTEM: &str = "You are a terse assistant.";

#[test]
fn every_turn_of_a_conversation_has_the_key_of_its_first() {
    let one = json!({"model": "m", "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "hello"}]});
    let three = json!({"model": "m", "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "more"}]});
    assert_eq!(key(Shape::Chat, one.clone()), key(Shape::Chat, three));
    let other = json!({"model": "m", "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "goodbye"}]});
    assert_ne!(key(Shape::Chat, one), key(Shape::Chat, other));
}

#[test]
fn every_surface_gives_one_conversation_the_same_key() {
    let tool_ollama =
        json!({"type": "function", "function": {"name": "weather", "parameters": {}}});
    let chat = json!({"model": "m", "tools": [tool_ollama], "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]}]});
    let anthropic = json!({"model": "m", "max_tokens": 9,
        "system": [{"type": "text", "text": SYSTEM}],
        "tools": [{"name": "weather", "input_schema": {}}],
        "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "x"}]});
    let responses = json!({"model": "m", "instructions": SYSTEM,
        "tools": [{"type": "function", "name": "weather", "parameters": {}}],
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hello"}]}]});
    let developer = json!({"model": "m", "tools": [tool_ollama], "messages": [
        {"role": "developer", "content": SYSTEM}, {"role": "user", "content": "hello"}]});
    let k = key(Shape::Chat, chat);
    assert!(k.is_some());
    assert_eq!(k, key(Shape::Anthropic, anthropic));
    assert_eq!(k, key(Shape::Responses, responses));
    assert_eq!(k, key(Shape::Chat, developer));
    // /api/generate: `system` and the prompt are the first turn.
    let chat = json!({"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hello"}]});
    let generate = json!({"model": "m", "system": SYSTEM, "prompt": "hello"});
    let responses = json!({"model": "m", "instructions": SYSTEM, "input": "hello"});
    assert_eq!(key(Shape::Chat, chat.clone()), key(Shape::Prompt, generate));
    assert_eq!(key(Shape::Chat, chat), key(Shape::Responses, responses));
}

#[test]
fn only_the_bound_is_read_and_pieces_do_not_run_together() {
    let long = "x".repeat(PREFIX_BOUND);
    let a = json!({"system": long, "prompt": "one"});
    let b = json!({"system": long, "prompt": "two"});
    assert_eq!(key(Shape::Prompt, a), key(Shape::Prompt, b));
    // "ab" + "c" is not "a" + "bc".
    let a = json!({"system": "ab", "prompt": "c"});
    let b = json!({"system": "a", "prompt": "bc"});
    assert_ne!(key(Shape::Prompt, a), key(Shape::Prompt, b));
}

#[test]
fn bodies_without_a_prefix_have_no_key() {
    assert_eq!(key(Shape::Chat, json!({"model": "m"})), None);
    assert_eq!(
        key(Shape::Chat, json!({"model": "m", "messages": null})),
        None
    );
    assert_eq!(key(Shape::Chat, json!({"messages": "x"})), None);
    assert_eq!(prefix(Shape::Chat, b"not json"), None);
    assert_eq!(Shape::of_path("/api/embed"), None);
    assert_eq!(Shape::of_path("/v1/messages"), Some(Shape::Anthropic));
}

#[test]
fn keys_are_the_same_in_every_process() {
    // Pinned (FNV-1a 64 and the MurmurHash3 finalizer, computed apart
    // from this code): a replica built elsewhere picks the same upstream.
    assert_eq!(stable_hash(b""), mix(0xcbf2_9ce4_8422_2325));
    assert_eq!(stable_hash(b"gpu0"), 0x4546_1f49_4648_ace6);
    assert_ne!(session("a"), session("b"));
}
