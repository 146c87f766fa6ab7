//! Tool calls written as text: reading never panics, stays linear, reads
//! the same calls and text however the answer is split, loses no text,
//! and only ever yields calls to the declared tools.
#![no_main]

use augur::inputs::{TextEvent, TextStream, ToolSet, extract};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fn set() -> ToolSet {
    let tool = |name: &str, props: serde_json::Value| {
        json!({"type": "function", "function": {"name": name,
            "parameters": {"type": "object", "properties": props}}})
    };
    ToolSet::from_request(&[
        tool(
            "get_weather",
            json!({"city": {"type": "string"}, "unit": {"type": "string"}}),
        ),
        tool("get_time", json!({"timezone": {"type": "string"}})),
        tool("print", json!({"text": {"type": "string"}})),
    ])
    .unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, data)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(data);
    let set = set();
    let whole = extract(&text, &set);
    for call in &whole.calls {
        assert!(set.get(&call.name).is_some(), "undeclared {}", call.name);
        assert!(call.arguments.is_object());
    }
    // Without calls, the text comes back exactly.
    if whole.calls.is_empty() {
        assert_eq!(whole.text, text);
    }
    // The same text in pieces of the seed's size.
    let step = 1 + usize::from(seed % 32);
    let mut stream = TextStream::new(&set);
    let (mut calls, mut out) = (Vec::new(), String::new());
    let mut events = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        events.extend(stream.feed(&text[start..end]));
        start = end;
    }
    events.extend(stream.finish());
    for event in events {
        match event {
            TextEvent::Text(t) => out.push_str(&t),
            TextEvent::Calls { calls: c, .. } => calls.extend(c),
            TextEvent::Unparsed { raw, .. } => out.push_str(&raw),
        }
    }
    assert_eq!(calls, whole.calls);
    assert_eq!(out, whole.text);
});
