//! Unit tests of `ps`.

use serde_json::json;

use super::*;

#[test]
fn a_listing_is_read_within_bounds() {
    let long = "m".repeat(1000);
    let listing = json!({"models": [
        {"name": "gemma3", "size": 10, "size_vram": 7, "expires_at": "2026-01-01T00:00:00Z"},
        {"model": long, "size": "big", "size_vram": -1},
        {"size": 1},
        "not an object",
    ]});
    let models = parse(&listing);
    assert_eq!(models.len(), 2);
    assert_eq!(models[0].name, "gemma3:latest");
    assert_eq!((models[0].size, models[0].size_vram), (10, 7));
    assert_eq!(models[1].name.chars().count(), MAX_TEXT);
    assert_eq!((models[1].size, models[1].size_vram), (0, 0));
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("m{i}")}))
        .collect();
    assert_eq!(parse(&json!({ "models": many })).len(), MAX_MODELS);
    assert!(parse(&json!([1, 2])).is_empty());
}

#[test]
fn a_copy_of_a_loaded_model_is_one_of_its_names() {
    let ps = json!({"models": [
        {"name": "gemma3:latest", "digest": "abc", "size": 1},
        {"name": "qwen3:latest", "digest": "def", "size": 1},
        {"name": "nodigest", "size": 1},
    ]});
    let tags = json!({"models": [
        {"name": "team/gemma:latest", "digest": "abc"},
        {"name": "gemma3", "digest": "abc"},
        {"name": "a-copy", "digest": "abc"},
        {"name": "qwen3:latest", "digest": "def"},
        {"name": "other", "digest": "xyz"},
        {"name": "nodigest", "digest": ""},
    ]});
    let mut models = parse(&ps);
    also_named(&mut models, &tags);
    assert_eq!(models[0].aliases, ["a-copy:latest", "team/gemma:latest"]);
    assert!(models[1].aliases.is_empty());
    assert!(models[2].aliases.is_empty());
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("c{i}"), "digest": "abc"}))
        .collect();
    also_named(&mut models, &json!({ "models": many }));
    assert_eq!(models[0].aliases.len(), MAX_ALIASES);
    also_named(&mut models, &json!([1, 2]));
    assert!(models[0].aliases.is_empty());
}

fn model(name: &str, size_vram: u64) -> LoadedModel {
    LoadedModel {
        name: name.to_string(),
        aliases: Vec::new(),
        digest: None,
        size: size_vram,
        size_vram,
        expires_at: None,
    }
}

#[test]
fn unloaded_models_go_to_zero_and_series_are_capped() {
    use metrics_exporter_prometheus::PrometheusBuilder;
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let gauges = Gauges::new("u");
        gauges.set("u", &[model("a:latest", 5), model("b:latest", 7)]);
        gauges.set("u", &[model("b:latest", 8)]);
        let many: Vec<LoadedModel> = (0..MAX_VRAM_SERIES + 10)
            .map(|i| model(&format!("m{i}:latest"), 1))
            .collect();
        let text = handle.render();
        let line = |m: &str| {
            text.lines()
                .find(|l| l.starts_with("augur_upstream_model_vram_bytes") && l.contains(m))
                .map(|l| l.rsplit(' ').next().unwrap_or_default().to_string())
        };
        assert_eq!(line("a:latest").as_deref(), Some("0"));
        assert_eq!(line("b:latest").as_deref(), Some("8"));
        assert!(text.contains("augur_upstream_models_loaded{upstream=\"u\"} 1"));
        gauges.set("u", &many);
        let series = handle
            .render()
            .lines()
            .filter(|l| l.starts_with("augur_upstream_model_vram_bytes{"))
            .count();
        assert_eq!(series, MAX_VRAM_SERIES);
    });
}
