//! Unit tests of `synthesize`.

use super::*;

fn calls() -> Vec<ToolCall> {
    vec![
        ToolCall {
            name: "get_weather".into(),
            arguments: json!({"city":"Tokyo","unit":"celsius"}),
        },
        ToolCall {
            name: "get_time".into(),
            arguments: json!({"zone":"Asia/Tokyo","a":1}),
        },
    ]
}

/// Replace every id by `ID` after checking its form.
fn scrub(v: &mut Value) {
    for c in v.as_array_mut().unwrap() {
        let id = c["id"].as_str().unwrap();
        assert_eq!(id.len(), 13, "{id}");
        assert!(id.starts_with("call_"));
        assert!(id[5..].bytes().all(|b| ID_ALPHABET.contains(&b)), "{id}");
        c["id"] = json!("ID");
    }
}

#[test]
fn ollama_shape_is_exact() {
    let mut v = ollama_tool_calls(&calls(), 0);
    scrub(&mut v);
    assert_eq!(
        v.to_string(),
        r#"[{"id":"ID","function":{"index":0,"name":"get_weather","arguments":{"city":"Tokyo","unit":"celsius"}}},{"id":"ID","function":{"index":1,"name":"get_time","arguments":{"zone":"Asia/Tokyo","a":1}}}]"#
    );
}

#[test]
fn ids_are_random_and_well_formed() {
    let ids: std::collections::HashSet<String> = (0..500).map(|_| new_call_id()).collect();
    assert_eq!(ids.len(), 500);
    let mut seen = [false; 36];
    for id in &ids {
        for b in id[5..].bytes() {
            let i = ID_ALPHABET.iter().position(|a| *a == b).unwrap();
            seen[i] = true;
        }
    }
    assert!(seen.iter().all(|s| *s));
}
