//! Unit tests: bodies read as Go reads them, or refused.

use super::*;

const MODEL: &[&str] = &["model"];

fn model_of(body: &str) -> Result<Option<String>, NamesError> {
    read(body.as_bytes(), MODEL).map(|n| n.primary().map(str::to_string))
}

#[test]
fn a_plain_body_names_its_model() {
    let body = r#"{"model":"gemma3","messages":[{"role":"user","content":"hi \"there\""}],"stream":false}"#;
    assert_eq!(model_of(body), Ok(Some("gemma3".into())));
    assert_eq!(
        model_of(r#" {"model":"a\u0062c"} "#),
        Ok(Some("abc".into()))
    );
    assert_eq!(model_of(r#"{"model":""}"#), Ok(None));
    assert_eq!(model_of(r#"{"model":null}"#), Ok(None));
    assert_eq!(model_of(r#"{"prompt":"x"}"#), Ok(None));
    assert!(!read(body.as_bytes(), MODEL).unwrap().acted_on);
}

#[test]
fn what_go_skips_is_skipped_here_too() {
    let deep = format!(
        r#"{{"model":"m","x":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    for body in [
        r#"{"model":"m","x":"\ud800"}"#,
        r#"{"model":"m","x":1e999}"#,
        r#"{"model":"m","x":{"Model":"other","model":"other"}}"#,
        &deep,
    ] {
        assert_eq!(model_of(body), Ok(Some("m".into())), "{body}");
    }
}

#[test]
fn bodies_go_would_read_otherwise_are_refused() {
    for (body, want) in [
        (r#"{"Model":"gemma3:4b"}"#, "must be written \"model\""),
        (r#"{"MODEL":"gemma3:4b"}"#, "must be written"),
        (
            r#"{"model":"qwen3:8b","MODEL":"gemma3:4b"}"#,
            "more than once",
        ),
        (
            r#"{"model":"qwen3:8b","model":"gemma3:4b"}"#,
            "more than once",
        ),
        (
            r#"{"model":"qwen3:8b"} {"model":"gemma3:4b"}"#,
            "invalid JSON",
        ),
        (r#"{"model":"qwen3:8b"}x"#, "invalid JSON"),
        (r#"{"model":5}"#, "must be a string"),
        (r#"{"model":["gemma3"]}"#, "must be a string"),
        (r#"["gemma3"]"#, "must be a JSON object"),
        ("\"gemma3\"", "must be a JSON object"),
        ("", "missing request body"),
        ("  \n", "missing request body"),
        (r#"{"model":"m""#, "invalid JSON"),
        ("{\"model\":\"m\",\"x\":\"\u{1}\"}", "invalid JSON"),
        (r#"{"Messages":[]}"#, "must be written"),
        ("{\"\u{212A}eep_alive\":1}", "must be written"),
    ] {
        let err = model_of(body).expect_err(body);
        assert!(err.to_string().contains(want), "{body}: {err}");
    }
    // ſ folds to s: "ſtream" is Go's "stream".
    let err = model_of("{\"model\":\"m\",\"\u{017F}tream\":true}").unwrap_err();
    assert!(
        matches!(
            err,
            NamesError::Spelling {
                expected: "stream",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn management_bodies_name_every_model() {
    let fields: &'static [&'static str] = &["model", "name", "from"];
    let n = read(br#"{"model":"qwen3:x","from":"gemma3:4b"}"#, fields).unwrap();
    assert_eq!(
        n.models,
        vec![
            ("model", "qwen3:x".to_string()),
            ("from", "gemma3:4b".to_string())
        ]
    );
    let n = read(
        br##"{"name":"qwen3:x","modelfile":"# base\nFROM gemma3:4b\nSYSTEM hi\nfrom \"llama3\"\n"}"##,
        fields,
    )
    .unwrap();
    assert_eq!(
        n.models,
        vec![
            ("name", "qwen3:x".to_string()),
            ("modelfile", "gemma3:4b".to_string()),
            ("modelfile", "llama3".to_string())
        ]
    );
    let copy: &'static [&'static str] = &["source", "destination"];
    let n = read(br#"{"source":"gemma3","destination":"qwen3:x"}"#, copy).unwrap();
    assert_eq!(n.primary(), Some("gemma3"));
    assert_eq!(n.models.len(), 2);
}

#[test]
fn fields_augur_acts_on_are_noticed() {
    for body in [
        r#"{"model":"m","format":"json"}"#,
        r#"{"model":"m","tools":[]}"#,
        r#"{"model":"m","think":false}"#,
        r#"{"model":"m","response_format":{"type":"json_object"}}"#,
        r#"{"model":"m","output_config":{"format":{"type":"json_schema","schema":{}}}}"#,
        r#"{"model":"m","output_format":{"type":"json_schema","schema":{}}}"#,
    ] {
        assert!(read(body.as_bytes(), MODEL).unwrap().acted_on, "{body}");
    }
    assert!(
        !read(br#"{"model":"m","format":null}"#, MODEL)
            .unwrap()
            .acted_on
    );
}

#[test]
fn a_key_given_twice_is_refused_however_it_is_spelled() {
    let dup = |body: &str| matches!(model_of(body), Err(NamesError::Duplicate(_)));
    assert!(dup(r#"{"model":"a","model":"b"}"#));
    assert!(dup(r#"{"x":1,"X":2}"#));
    assert!(dup(r#"{"model":"a","\u006dodel":"b"}"#));
    // Past the short list the keys are kept in a set.
    let many: String = (0..40).map(|i| format!(r#""k{i}":{i},"#)).collect();
    assert!(dup(&format!(r#"{{{many}"k3":0}}"#)));
    assert!(dup(&format!(r#"{{{many}"k39":0}}"#)));
    assert_eq!(
        model_of(&format!(r#"{{{many}"model":"m"}}"#)),
        Ok(Some("m".into()))
    );
}
