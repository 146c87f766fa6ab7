//! Unit tests of `genai`.

use super::*;

#[test]
fn routes_map_to_genai_operations() {
    assert_eq!(operation("/api/chat"), Some("chat"));
    assert_eq!(operation("/v1/messages"), Some("chat"));
    assert_eq!(operation("/api/generate"), Some("text_completion"));
    assert_eq!(operation("/v1/embeddings"), Some("embeddings"));
    assert_eq!(operation("/api/tags"), None);
}

#[test]
fn model_labels_are_capped() {
    let first = model_label("capped-test-a:latest");
    assert_eq!(&*first, "capped-test-a:latest");
    for i in 0..MAX_MODELS {
        let _ = model_label(&format!("capped-test-{i}:latest"));
    }
    assert_eq!(&*model_label("one-too-many:latest"), "other");
    // Names seen before the cap keep their label.
    assert_eq!(
        &*model_label("capped-test-a:latest"),
        "capped-test-a:latest"
    );
}

#[test]
fn time_per_output_token_prefers_the_upstream_measure() {
    let ok = Ending {
        ok: true,
        streamed: true,
    };
    let counts = Counts {
        input: 5,
        output: 10,
        eval_ns: Some(500_000_000),
    };
    assert_eq!(
        per_output_token(counts, None, ok),
        Some(Duration::from_millis(50))
    );
    let no_eval = Counts {
        eval_ns: None,
        ..counts
    };
    assert_eq!(per_output_token(no_eval, None, ok), None);
    let first = Instant::now();
    assert!(per_output_token(no_eval, Some(first), ok).is_some());
    let failed = Ending { ok: false, ..ok };
    assert_eq!(per_output_token(counts, Some(first), failed), None);
}
