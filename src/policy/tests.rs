//! Unit tests: merging, glob resolution, compile errors.

use std::{fs, path::Path};

use super::*;

fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

fn load(files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
    let (p, s) = dirs();
    write(
        s.path(),
        "answer.json",
        r#"{"type":"object","required":["a"]}"#,
    );
    for (name, text) in files {
        write(p.path(), name, text);
    }
    load_dir(p.path(), s.path())
}

#[test]
fn globs_match_every_spelling_of_a_model() {
    let globs = ModelGlobs::new(&["gemma3:*".to_string(), "Qwen3".to_string()]).unwrap();
    for allowed in [
        "gemma3",
        "gemma3:4b",
        "registry.ollama.ai/library/gemma3:4b",
        "GEMMA3:4B",
        "qwen3",
        "library/qwen3:latest",
    ] {
        assert!(globs.allows(allowed), "{allowed}");
    }
    for refused in ["qwen3:8b", "hf.co/x/gemma3:4b", "llama3"] {
        assert!(!globs.allows(refused), "{refused}");
    }
    let prefixed = ModelGlobs::new(&["registry.ollama.ai/library/gemma3:*".to_string()]).unwrap();
    assert!(prefixed.allows("gemma3:4b"));
}

#[test]
fn empty_and_missing_dirs_are_permissive() {
    let (p, s) = dirs();
    let policy = load_dir(&p.path().join("nope"), s.path()).unwrap();
    assert_eq!(policy.meta.version, "empty");
    assert_eq!(*policy.model("gemma3"), ModelPolicy::default());
    assert!(!policy.auth.required);
    let policy = load_dir(p.path(), s.path()).unwrap();
    assert_eq!(policy.meta.version, "empty");
    // A file with only comments is fine too.
    let policy = load(&[("a.yaml", "# nothing yet\n")]).unwrap();
    assert_eq!(*policy.model("x"), ModelPolicy::default());
}

#[test]
fn shipped_example_changes_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy = load_dir(&root.join("policies"), &root.join("schemas")).unwrap();
    assert_eq!(policy.meta.files.len(), 1);
    assert!(!policy.auth.required && policy.auth.keys.is_empty());
    assert_eq!(policy.default_rate_limit, None);
    assert_eq!(policy.audit, AuditPolicy::default());
    assert_eq!(*policy.model("gemma3:27b"), ModelPolicy::default());
}

#[test]
fn later_files_and_entries_override_key_by_key() {
    let policy = load(&[
        (
            "00-base.yaml",
            "defaults:\n  validate: {max_retries: 3, repair: false}\n  rate_limit: {requests_per_minute: 60}\n\
             models:\n  \"gemma3:*\": {emulate_tools: always, concurrency: {max_in_flight: 2}}\n  \
             \"gemma3:27b\": {emulate_tools: never}\n",
        ),
        (
            "10-site.yaml",
            "defaults:\n  validate: {max_retries: 2}\n  rate_limit: {burst: 5}\n\
             models:\n  gemma3: {think_emulation: false, format: {schema: answer.json}}\n  \
             \"gemma3:*\": {concurrency: {max_in_flight: 4}}\n",
        ),
    ])
    .unwrap();
    let d = policy.model("other");
    assert_eq!((d.validate.max_retries, d.validate.repair), (2, false));
    assert_eq!(d.emulate_tools, EmulateTools::Auto);
    assert_eq!(d.rate_limit, None, "defaults.rate_limit is per principal");
    let rl = policy.default_rate_limit.unwrap();
    assert_eq!((rl.requests_per_minute, rl.burst), (Some(60), Some(5)));

    // "gemma3" normalizes to gemma3:latest: matches "gemma3:*" and "gemma3".
    let g = policy.model("gemma3");
    assert_eq!(g.emulate_tools, EmulateTools::Always);
    assert!(!g.think_emulation);
    assert_eq!(g.format.as_ref().unwrap().apply, FormatApply::WhenJson);
    assert_eq!(g.concurrency.unwrap().max_in_flight, 4);
    assert_eq!(g.concurrency.unwrap().queue_timeout_ms, 30_000);
    assert_eq!(g.matched_glob.as_deref(), Some("gemma3:*"));

    // The later "gemma3:*" entry does not undo the earlier exact one's key.
    let big = policy.model("gemma3:27b");
    assert_eq!(big.emulate_tools, EmulateTools::Never);
    assert!(big.think_emulation && big.format.is_none());
    assert_eq!(policy.model("gemma3:latest"), g);
}

#[test]
fn null_removes_inherited_blocks() {
    let policy = load(&[(
        "a.yaml",
        "defaults:\n  concurrency: {max_in_flight: 1, queue_timeout_ms: 0}\n  format: {schema: answer.json, apply: always}\n\
         models:\n  \"qwen*\": {concurrency: null, format: null}\n",
    )])
    .unwrap();
    assert!(policy.model("gemma3").concurrency.is_some());
    assert!(policy.model("gemma3").format.is_some());
    assert_eq!(policy.model("qwen3:8b").concurrency, None);
    assert_eq!(policy.model("qwen3:8b").format, None);
}

#[test]
fn auth_keys_merge_across_files() {
    let h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let policy = load(&[
        (
            "a.yaml",
            &format!("auth:\n  required: true\n  keys: [{{id: a, key_sha256: {h}}}]\n"),
        ),
        (
            "b.yaml",
            "auth:\n  keys: [{id: b, key_env: PATH, models: [\"gemma3:*\"], rate_limit: null}]\n",
        ),
    ])
    .unwrap();
    assert!(policy.auth.required);
    let ids: Vec<_> = policy.auth.keys.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    let b = &policy.auth.keys[1];
    assert!(b.allowed.allows("gemma3") && !b.allowed.allows("qwen3"));
    assert_eq!(b.rate_limit, Some(RateLimit::default()));
}

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
    assert!(err.contains("not a valid JSON Schema"), "{err}");
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
