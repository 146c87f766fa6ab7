//! Unit tests: merging, glob resolution, compile errors.

mod fallback;
mod reject;

use std::{fs, path::Path};

use super::*;

pub(super) fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

pub(super) fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

pub(super) fn load(files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
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
fn an_empty_dir_is_permissive_and_a_missing_one_an_error() {
    let (p, s) = dirs();
    let err = load_dir(&p.path().join("nope"), s.path()).unwrap_err();
    assert!(matches!(err, PolicyError::MissingDir { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    let policy = load_dir(p.path(), s.path()).unwrap();
    assert_eq!(policy.meta.version, "empty");
    assert_eq!(*policy.model("gemma3"), ModelPolicy::default());
    assert!(!policy.auth.required);
    // A file with no settings is an explicit empty policy.
    for text in ["# nothing yet\n", "{}\n", "", "---\n"] {
        let policy = load(&[("00-empty.yaml", text)]).unwrap();
        assert_eq!(*policy.model("x"), ModelPolicy::default(), "{text:?}");
        assert_eq!(policy.meta.files.len(), 1);
        assert_ne!(policy.meta.version, "empty");
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn shipped_policies_change_only_the_bundled_model() {
    let policy = load_dir(&root().join("policies"), &root().join("schemas")).unwrap();
    // example.yaml (comments only) and the bundled 270M model's file.
    assert_eq!(policy.meta.files.len(), 2);
    assert!(!policy.auth.required && policy.auth.keys.is_empty());
    assert_eq!(policy.default_rate_limit, None);
    assert_eq!(policy.audit, AuditPolicy::default());
    assert_eq!(*policy.model("gemma3:27b"), ModelPolicy::default());
    assert!(policy.meta.sources.set_by.is_empty());
    let small = policy.model("gemma3:270m");
    assert_eq!(
        ModelPolicy {
            small_model: false,
            matched_glob: None,
            ..(*small).clone()
        },
        ModelPolicy::default()
    );
    assert!(small.small_model);
}

/// The example, uncommented as it tells operators to do, is a valid policy
/// whose defaults block equals the built-in defaults.
#[test]
fn shipped_example_uncommented_is_valid() {
    let text = fs::read_to_string(root().join("policies/example.yaml")).unwrap();
    let yaml: String = text
        .lines()
        .filter(|l| !l.starts_with("##"))
        .map(|l| l.strip_prefix("# ").or(l.strip_prefix('#')).unwrap_or(l))
        .map(|l| format!("{}\n", l.replace("AUGUR_NOTEBOOK_KEY", "PATH")))
        .collect();
    let (p, s) = dirs();
    write(s.path(), "answer.schema.json", r#"{"type":"object"}"#);
    write(p.path(), "example.yaml", &yaml);
    let policy = load_dir(p.path(), s.path()).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert!(policy.auth.keys.len() == 2 && policy.models.entries().len() == 3);
    let mut only_defaults = (**policy.models.defaults()).clone();
    only_defaults.format = None;
    only_defaults.concurrency = None;
    only_defaults.fallback = None;
    // The example shows a cache block; the default is none.
    assert!(only_defaults.cache.take().is_some());
    // The example writes out what the default amounts to under `auto`.
    assert_eq!(only_defaults.rescue_text_calls, Some(true));
    assert!(ModelPolicy::default().rescues_text_calls());
    only_defaults.rescue_text_calls = None;
    // And what `small_model: false` amounts to for its two rules.
    let small_rules = (
        only_defaults.drop_ungrounded,
        only_defaults.answer_unrelated,
    );
    assert_eq!(small_rules, (Some(false), Some(false)));
    let d = ModelPolicy::default();
    assert!(!d.drops_ungrounded() && !d.answers_unrelated());
    (
        only_defaults.drop_ungrounded,
        only_defaults.answer_unrelated,
    ) = (None, None);
    assert_eq!(only_defaults, ModelPolicy::default());
}

/// What the example advises, a site file with the settings to change, takes
/// effect with the example present, whatever the site file is called.
#[test]
fn a_site_file_beside_the_shipped_example_takes_effect() {
    let site = "defaults:\n  emulate_tools: never\n  validate: {enabled: false, repair: false, max_retries: 3, degrade: false, stream: pass, on_failure: pass}\n  think_emulation: false\n  tools: {parallel: false, loop_breaker: false, small_model: true, drop_ungrounded: false, answer_unrelated: false, rescue_text_calls: true, mode: text, text_format: tool_call}\n  advertise_capabilities: false\n\
                auth:\n  required: true\n\
                audit: {path: audit.jsonl, include_arguments: true}\n";
    for name in ["10-site.yaml", "site.yaml", "zz-site.yaml", "00-site.yaml"] {
        let (p, s) = dirs();
        fs::copy(
            root().join("policies/example.yaml"),
            p.path().join("example.yaml"),
        )
        .unwrap();
        write(p.path(), name, site);
        let policy = load_dir(p.path(), s.path()).unwrap();
        assert_eq!(policy.meta.files.len(), 2);
        let d = policy.model("gemma3");
        assert_eq!(d.emulate_tools, EmulateTools::Never, "{name}");
        assert!(!d.parallel_tool_calls && !d.think_emulation && !d.advertise_capabilities);
        assert!(!d.loop_breaker && d.small_model);
        assert!(!d.drops_ungrounded() && !d.answers_unrelated());
        // Set explicitly, rescue holds even under `never`.
        assert!(d.rescues_text_calls());
        assert_eq!(
            (d.tools_mode, d.text_format),
            (ToolsMode::Text, TextFormat::ToolCall)
        );
        let v = &d.validate;
        assert!(!v.enabled && !v.repair && !v.degrade && v.max_retries == 3);
        assert_eq!(
            (v.stream, v.on_failure),
            (Some(StreamMode::Pass), OnFailure::Pass)
        );
        assert!(policy.auth.required && policy.audit.include_arguments);
        let by = &policy.meta.sources.set_by;
        assert!(by["defaults.tools.parallel"].ends_with(name), "{by:?}");
    }
}

#[test]
fn the_effective_policy_shows_what_wins_and_no_secrets() {
    let h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let policy = load(&[
        (
            "00-base.yaml",
            "defaults: {tools: {parallel: false}, rate_limit: {requests_per_minute: 60}}\n\
             models: {\"gemma3:*\": {emulate_tools: always}}\n",
        ),
        (
            "10-site.yaml",
            &format!(
                "defaults: {{tools: {{parallel: true}}}}\n\
                 models: {{\"gemma3:*\": {{concurrency: {{max_in_flight: 2}}}}, qwen3: {{format: {{schema: answer.json}}}}}}\n\
                 auth: {{required: true, keys: [{{id: ci, key_sha256: {h}, models: [\"gemma3:*\"]}}, {{id: nb, key_sha256: {}, rate_limit: null}}]}}\n",
                "0".repeat(64)
            ),
        ),
    ])
    .unwrap();
    let e = show::effective(&policy);
    assert_eq!(e["defaults"]["tools"]["parallel"], true);
    assert_eq!(e["defaults"]["rate_limit"]["requests_per_minute"], 60);
    assert!(
        e["set_by"]["defaults.tools.parallel"]
            .as_str()
            .unwrap()
            .ends_with("10-site.yaml")
    );
    assert!(
        e["set_by"]["defaults.rate_limit"]
            .as_str()
            .unwrap()
            .ends_with("00-base.yaml")
    );
    let gemma = &e["models"][0];
    assert_eq!(gemma["glob"], "gemma3:*");
    assert_eq!(gemma["files"].as_array().unwrap().len(), 2);
    assert_eq!(gemma["settings"]["emulate_tools"], "always");
    assert_eq!(gemma["settings"]["concurrency"]["max_in_flight"], 2);
    assert_eq!(gemma["settings"]["concurrency"]["queue_timeout_ms"], 30_000);
    assert_eq!(
        e["models"][1]["settings"]["format"]["schema"],
        "answer.json"
    );
    assert_eq!(e["auth"]["required"], true);
    assert_eq!(e["auth"]["keys"][0]["id"], "ci");
    assert_eq!(e["auth"]["keys"][0]["models"][0], "gemma3:*");
    assert_eq!(
        e["auth"]["keys"][0]["rate_limit"]["requests_per_minute"],
        60
    );
    assert_eq!(e["auth"]["keys"][1]["models"], "all");
    assert!(e["auth"]["keys"][1]["rate_limit"].is_null());
    let text = e.to_string();
    assert!(
        !text.contains(h) && !text.contains(&"0".repeat(64)),
        "{text}"
    );
}

#[test]
fn bounds_are_checked_before_parsing_and_name_the_file() {
    let big = format!("# {}\n", "x".repeat(MAX_FILE_BYTES as usize));
    let err = load(&[("10-big.yaml", &big)]).unwrap_err().to_string();
    assert!(
        err.contains("10-big.yaml") && err.contains("1048576"),
        "{err}"
    );

    let (p, s) = dirs();
    for i in 0..=MAX_FILES {
        write(p.path(), &format!("{i:04}.yaml"), "{}\n");
    }
    let err = load_dir(p.path(), s.path()).unwrap_err().to_string();
    assert!(err.contains("256 policy files"), "{err}");

    let (p, s) = dirs();
    let part = format!("# {}\n", "x".repeat(MAX_FILE_BYTES as usize - 100));
    for i in 0..5 {
        write(p.path(), &format!("{i}.yaml"), &part);
    }
    let err = load_dir(p.path(), s.path()).unwrap_err().to_string();
    assert!(err.contains(&MAX_TOTAL_BYTES.to_string()), "{err}");

    let deep = format!("defaults: {}\n", "[".repeat(100_000));
    let err = load(&[("10-deep.yaml", &deep)]).unwrap_err().to_string();
    assert_eq!(
        err.split_once("10-deep.yaml").unwrap().1,
        ": line 1: nested deeper than 64 levels"
    );
    let err = load(&[("a.yaml", "defaults: !!map {}\n")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid YAML") && err.contains("tags"),
        "{err}"
    );
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

/// The rules that judge a conversation's words are off unless a policy
/// turns on `tools.small_model` (per model glob), or each rule on its own;
/// a rule set on its own wins over the preset, whatever the order.
#[test]
fn small_model_rules_are_an_opt_in_per_model() {
    let (p, s) = dirs();
    write(
        p.path(),
        "small.yaml",
        "models:\n  \"gemma3:270m\":\n    tools: {small_model: true}\n  \"tiny*\":\n    tools: {small_model: true, answer_unrelated: false}\n  \"big*\":\n    tools: {drop_ungrounded: true}\n",
    );
    let policy = load_dir(p.path(), s.path()).unwrap();
    let d = policy.model("gemma3:27b");
    assert!(!d.small_model && !d.drops_ungrounded() && !d.answers_unrelated());
    let small = policy.model("gemma3:270m");
    assert!(small.small_model && small.drops_ungrounded() && small.answers_unrelated());
    let tiny = policy.model("tiny");
    assert!(tiny.drops_ungrounded() && !tiny.answers_unrelated());
    let big = policy.model("big");
    assert!(big.drops_ungrounded() && !big.answers_unrelated());
}
