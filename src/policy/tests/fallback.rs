//! Unit tests: the `fallback:` block (compile, merge, errors, show).

use std::fs;

use super::super::*;

fn load(text: &str) -> Result<Policy, PolicyError> {
    let (p, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fs::write(p.path().join("10.yaml"), text).unwrap();
    load_dir(p.path(), s.path())
}

#[test]
fn fallback_blocks_compile_merge_and_show() {
    let policy = load(
        "defaults:\n  fallback: {models: [\"big\"]}\n\
         models:\n  \"small:*\": {fallback: {models: [\"mid\", \"big\"], on: [invalid, repaired]}}\n  \
         \"other\": {fallback: null}\n",
    )
    .unwrap();
    let d = policy.model("anything").fallback.clone().unwrap();
    assert_eq!(d.models, ["big"]);
    assert_eq!(d.on, FallbackOn::default());
    assert!(d.on.invalid && d.on.truncated && d.on.upstream_error && !d.on.repaired);
    let small = policy.model("small:4b").fallback.clone().unwrap();
    assert_eq!(small.models, ["mid", "big"]);
    assert!(small.on.invalid && small.on.repaired && !small.on.truncated);
    assert!(policy.model("other").fallback.is_none());
    let shown = show::effective(&policy);
    assert_eq!(
        shown["defaults"]["fallback"],
        serde_json::json!({"models": ["big"], "on": ["invalid", "truncated", "upstream_error"], "when": null})
    );
}

#[test]
fn bad_fallback_blocks_are_rejected() {
    for bad in [
        "defaults:\n  fallback: {models: []}\n",
        "defaults:\n  fallback: {models: [a, b, c, d, e]}\n",
        "defaults:\n  fallback: {models: [\"gemma3:*\"]}\n",
        "defaults:\n  fallback: {models: [a], on: [slow]}\n",
        "defaults:\n  fallback: {on: [invalid]}\n",
        "defaults:\n  fallback: {models: [a], after: 2}\n",
    ] {
        assert!(load(bad).is_err(), "{bad}");
    }
}

#[test]
fn fallback_models_must_be_valid_model_names() {
    for (yaml, shown) in [
        (r#""big\r\nX-Evil: 1""#, r#""big\r\nX-Evil: 1""#),
        (r#""big\x7f""#, r#""big\u{7f}""#),
        (r#""big\x00""#, r#""big\0""#),
        (r#""b\tig""#, r#""b\tig""#),
        (r#""a b""#, r#""a b""#),
        (r#""Ünï""#, r#""Ünï""#),
        (r#""/big""#, r#""/big""#),
    ] {
        let text = format!("models:\n  small: {{fallback: {{models: [mid, {yaml}]}}}}\n");
        let e = load(&text).unwrap_err().to_string();
        assert!(
            e.contains("/10.yaml: models.\"small\".fallback.models: "),
            "{e}"
        );
        assert!(
            e.contains(&format!("{shown} is not a valid model name")),
            "{yaml}: {e}"
        );
    }
    assert!(load("defaults:\n  fallback: {models: [\"hf.co/org/m:Q4_K_M\", \" big \"]}\n").is_ok());
}

#[test]
fn confidence_keys_compile_merge_and_show() {
    let policy = load(
        "defaults:\n  confidence: {threshold: 0.78}\n\
         models:\n  \"small:*\":\n    validate: {on_low_confidence: retry}\n  \
         \"cascade:*\":\n    confidence: null\n    fallback: {models: [big], when: {confidence_below: 0.6}}\n  \
         \"plain\": {confidence: null}\n  \
         \"to-fallback\": {confidence: null, validate: {on_low_confidence: fallback}, fallback: {models: [big]}}\n",
    )
    .unwrap();
    let d = policy.model("anything");
    assert_eq!(d.confidence().unwrap().threshold.get(), 0.78);
    assert_eq!(d.fallback_below(), None, "no fallback block");
    let small = policy.model("small:4b");
    assert_eq!(small.validate.on_low_confidence, OnLowConfidence::Retry);
    assert_eq!(small.confidence().unwrap().threshold.get(), 0.78);
    // A fallback on low confidence asks for confidence by itself.
    let cascade = policy.model("cascade:7b");
    assert!(cascade.confidence.is_none());
    assert!(cascade.confidence().is_some());
    assert_eq!(cascade.fallback_below(), Some(0.6));
    assert!(policy.model("plain").confidence().is_none());
    let to = policy.model("to-fallback");
    assert_eq!(to.fallback_below(), Some(DEFAULT_CONFIDENCE_THRESHOLD));
    let shown = show::effective(&policy);
    assert_eq!(
        shown["defaults"]["confidence"],
        serde_json::json!({"threshold": 0.78})
    );
    let auto = load("models:\n  \"m\": {tools: {small_model: auto}}\n").unwrap();
    let m = auto.model("m");
    assert!(m.small_model_auto && !m.small_model);
    assert!(m.drops_ungrounded() && m.answers_unrelated());
    assert_eq!(
        m.confidence().unwrap().threshold.get(),
        DEFAULT_CONFIDENCE_THRESHOLD
    );
    assert_eq!(
        show::effective(&auto)["models"][0]["settings"]["tools"]["small_model"],
        "auto"
    );
    for bad in [
        "defaults:\n  tools: {small_model: sometimes}\n",
        "defaults:\n  confidence: {threshold: 1.5}\n",
        "defaults:\n  confidence: {level: 1}\n",
        "defaults:\n  validate: {on_low_confidence: maybe}\n",
        "defaults:\n  fallback: {models: [a], when: {confidence_below: -1}}\n",
    ] {
        assert!(load(bad).is_err(), "{bad}");
    }
}
