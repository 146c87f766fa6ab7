//! Unit tests: policy files and schemas refused with the file and place,
//! schema versions, and defaults that follow other settings.

use super::super::*;
use super::{dirs, load, write};

fn rejected(text: &str) -> String {
    load(&[
        ("00-ok.yaml", "defaults: {think_emulation: false}\n"),
        ("10-limits.yaml", text),
    ])
    .unwrap_err()
    .to_string()
}

#[test]
fn broken_files_are_rejected_with_file_and_place() {
    let h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let cases: Vec<(String, &str)> = vec![
        ("defaults: [\n".into(), "invalid YAML"),
        (
            "defaults: {emulate_tools: sometimes}\n".into(),
            "defaults.emulate_tools",
        ),
        (
            "defaults: {rate_limit: {requests_per_minute: 0}}\n".into(),
            "rate_limit",
        ),
        ("defaultz: {}\n".into(), "defaultz"),
        (
            "models: {\"gemma3:[\": {}}\n".into(),
            "models.\"gemma3:[\": invalid glob",
        ),
        (
            "defaults: {format: {schema: nope.json}}\n".into(),
            "defaults.format.schema",
        ),
        (
            "defaults: {format: {schema: ../etc/passwd}}\n".into(),
            "schemas directory",
        ),
        (
            "auth: {keys: [{id: x, key_env: AUGUR_TEST_UNSET_VARIABLE_7f3a}]}\n".into(),
            "AUGUR_TEST_UNSET_VARIABLE_7f3a is not set",
        ),
        (
            format!(
                "auth: {{keys: [{{id: x, key_sha256: {h}}}, {{id: x, key_sha256: {}}}]}}\n",
                "0".repeat(64)
            ),
            "duplicate key id",
        ),
        (
            "auth: {keys: [{id: x, key_sha256: abc}]}\n".into(),
            "key_sha256",
        ),
        (
            "auth: {keys: [{id: x, key_sha256: ".to_string() + h + ", models: [\"[\"]}]}\n",
            "invalid glob",
        ),
    ];
    for (text, expect) in cases {
        let err = rejected(&text);
        assert!(err.contains("10-limits.yaml: "), "{text}: {err}");
        assert!(err.contains(expect), "{text}: {err} lacks {expect}");
    }
}

#[test]
fn invalid_format_schema_is_rejected() {
    let (p, s) = dirs();
    write(s.path(), "bad.json", "{not json");
    write(s.path(), "wrong.json", r#"{"type": 12}"#);
    write(
        p.path(),
        "a.yaml",
        "defaults: {format: {schema: bad.json}}\n",
    );
    assert!(
        load_dir(p.path(), s.path())
            .unwrap_err()
            .to_string()
            .contains("not JSON")
    );
    write(
        p.path(),
        "a.yaml",
        "defaults: {format: {schema: wrong.json}}\n",
    );
    let err = load_dir(p.path(), s.path()).unwrap_err().to_string();
    assert!(err.contains("cannot be used"), "{err}");
}

#[test]
fn version_tracks_referenced_schema_content() {
    let (p, s) = dirs();
    write(s.path(), "answer.json", r#"{"type":"object"}"#);
    write(
        p.path(),
        "a.yaml",
        "defaults: {format: {schema: answer.json}}\n",
    );
    let v1 = load_dir(p.path(), s.path()).unwrap().meta.version;
    write(s.path(), "answer.json", r#"{"type":"array"}"#);
    let v2 = load_dir(p.path(), s.path()).unwrap().meta.version;
    assert_ne!(v1, v2);
}

#[test]
fn text_call_rescue_follows_emulate_tools_unless_set() {
    for (yaml, want) in [
        ("defaults: {}", true),
        ("defaults: {emulate_tools: never}", false),
        ("defaults: {emulate_tools: always}", false),
        (
            "defaults: {emulate_tools: never, tools: {rescue_text_calls: true}}",
            true,
        ),
        ("defaults: {tools: {rescue_text_calls: false}}", false),
        // A model entry's `emulate_tools` decides the default for it.
        ("models: {\"gemma3\": {emulate_tools: never}}", false),
    ] {
        let policy = load(&[("p.yaml", yaml)]).unwrap();
        assert_eq!(policy.model("gemma3").rescues_text_calls(), want, "{yaml}");
    }
    let policy = load(&[("p.yaml", "defaults: {tools: {mode: text}}")]).unwrap();
    let d = policy.model("x");
    assert_eq!(
        (d.tools_mode, d.text_format),
        (ToolsMode::Text, TextFormat::Python)
    );
    for bad in [
        "defaults: {tools: {mode: fancy}}",
        "defaults: {tools: {text_format: xml}}",
    ] {
        let err = load(&[("p.yaml", bad)]).unwrap_err();
        assert!(err.to_string().contains("tools"), "{bad}: {err}");
    }
}
