//! Unit tests of `dropped`.

use serde_json::json;

use super::*;

#[test]
fn the_amended_body_keeps_only_the_functions() {
    let body = json!({"model": "m", "input": "hi", "tools": [
        {"type": "function", "name": "f"},
        {"type": "web_search"},
        {"type": "namespace", "name": "fs", "tools": []},
        {"type": "file_search", "vector_store_ids": ["vs_1"]}
    ]});
    let types = ["web_search".to_string(), "file_search".to_string()];
    let hosted = |t: &str| !matches!(t, "" | "function" | "namespace");
    let d = Dropped::new(&types, body.as_object().unwrap(), hosted).unwrap();
    let a = d.amended();
    assert_eq!(a.headers[DROPPED_TOOLS], "web_search, file_search");
    let sent: Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(
        sent["tools"],
        json!([{"type": "function", "name": "f"}, {"type": "namespace", "name": "fs", "tools": []}])
    );
    assert_eq!(sent["input"], "hi");
}

#[test]
fn odd_types_make_a_valid_header() {
    let types = ["a b\n".to_string(), "é".repeat(100)];
    let v = header_value(&types);
    assert_eq!(v.to_str().unwrap(), format!("a_b_, {}", "_".repeat(64)));
}

#[test]
fn the_header_goes_on_whole_and_streamed_answers() {
    let body = json!({"tools": [{"type": "mcp"}]});
    let d = Dropped::new(&["mcp".to_string()], body.as_object().unwrap(), |t| {
        t == "mcp"
    })
    .unwrap();
    let mut out = Output::Full {
        value: json!({}),
        headers: HeaderMap::new(),
    };
    d.mark(&mut out);
    let Output::Full { headers, .. } = out else {
        unreachable!()
    };
    assert_eq!(headers[DROPPED_TOOLS], "mcp");
    let (_tx, rx) = tokio::sync::mpsc::channel(1);
    let mut out = Output::Stream {
        rx,
        headers: HeaderMap::new(),
    };
    d.mark(&mut out);
    let Output::Stream { headers, .. } = out else {
        unreachable!()
    };
    assert_eq!(headers[DROPPED_TOOLS], "mcp");
}
