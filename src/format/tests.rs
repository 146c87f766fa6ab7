//! Normalization tests over `tests/fixtures/formats/{normalize,response_format}.json`.
//! Each case: `input` (absent when null), `expect` = null (unset), "json",
//! `{"schema": …}` or `{"error": substring}`, and `changed`.

use serde_json::Value;

use super::{Format, Normalized, normalize, normalize_response_format};
use crate::format::FormatError;

fn cases(file: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/fixtures/formats/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("fixture file");
    serde_json::from_str(&text).expect("fixture JSON")
}

fn run(file: &str, f: fn(Option<&Value>) -> Result<Normalized, FormatError>) -> usize {
    let all = cases(file);
    for c in &all {
        let input = match &c["input"] {
            Value::Null => None,
            v => Some(v),
        };
        let got = f(input);
        let expect = &c["expect"];
        match (expect, &got) {
            (Value::Object(e), Err(FormatError(msg))) if e.contains_key("error") => {
                let want = e["error"].as_str().unwrap_or_default();
                assert!(msg.contains(want), "{input:?}: {msg:?} lacks {want:?}");
            }
            (Value::Object(e), got) if e.contains_key("error") => {
                panic!("{input:?}: expected an error, got {got:?}")
            }
            (_, Err(e)) => panic!("{input:?}: unexpected error {e}"),
            (want, Ok(n)) => {
                let want_format = match want {
                    Value::Null => None,
                    Value::String(s) if s == "json" => Some(Format::Json),
                    Value::Object(o) => Some(Format::Schema(o["schema"].clone())),
                    other => panic!("bad fixture {other}"),
                };
                assert_eq!(n.format, want_format, "{input:?}");
                assert_eq!(Some(n.changed), c["changed"].as_bool(), "{input:?} changed");
            }
        }
    }
    all.len()
}

#[test]
fn normalize_fixtures() {
    assert!(run("normalize.json", normalize) >= 20);
}

#[test]
fn response_format_fixtures() {
    assert!(run("response_format.json", normalize_response_format) >= 5);
}

#[test]
fn error_messages_name_the_value() {
    let e = normalize(Some(&Value::String("yaml".into()))).err();
    assert_eq!(
        e.map(|e| e.0).as_deref(),
        Some(
            "invalid format \"yaml\": expected \"json\", a JSON Schema object, or an OpenAI json_schema wrapper"
        )
    );
}
