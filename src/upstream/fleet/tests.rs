use std::collections::HashSet;

use http::{HeaderMap, HeaderValue};
use serde_json::json;

use super::state::ahead;
use super::*;
use crate::{
    config::{Config, UpstreamSpec},
    upstream::pool::Ahead,
};

fn fleet(names: &[&str]) -> Fleet {
    let upstreams = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut spec = UpstreamSpec::from_url(&format!("http://127.0.0.1:{}", i + 1)).unwrap();
            spec.name = name.to_string();
            spec
        })
        .collect();
    let config = Config {
        upstreams,
        ..Config::default()
    };
    Fleet::new(&config).unwrap()
}

fn set(names: &[&str]) -> HashSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn listings_give_normalized_names() {
    let listing = json!({"models": [
        {"name": "Gemma3", "model": "gemma3:latest"},
        {"name": "registry.ollama.ai/library/qwen3:8b"},
        {"size": 1}
    ]});
    assert_eq!(
        monitor::names(&listing),
        set(&["gemma3:latest", "qwen3:8b"])
    );
    assert!(monitor::names(&json!({"models": "x"})).is_empty());
}

#[test]
fn the_header_names_an_upstream_and_an_unknown_name_is_refused() {
    let f = fleet(&["a", "b"]);
    let mut headers = HeaderMap::new();
    headers.insert(&X_AUGUR_UPSTREAM, HeaderValue::from_static("b"));
    assert_eq!(f.choose(&headers, &Target::Any).unwrap(), 1);
    headers.insert(&X_AUGUR_UPSTREAM, HeaderValue::from_static("c"));
    let e = f.choose(&headers, &Target::Any).unwrap_err();
    assert_eq!(e.status(), http::StatusCode::BAD_REQUEST);
}

#[test]
fn models_route_to_whoever_has_them_and_loaded_ones_win() {
    let f = fleet(&["a", "b", "c"]);
    f.member(0).unwrap().set_models(set(&["x:latest"]));
    f.member(1)
        .unwrap()
        .set_models(set(&["x:latest", "y:latest"]));
    f.member(2).unwrap().set_models(set(&[]));
    let model = |name: &str| Target::Model {
        name: name.to_string(),
        prefer: None,
        affinity: None,
    };
    let none = HeaderMap::new();
    assert_eq!(f.choose(&none, &model("y:latest")).unwrap(), 1);
    assert_eq!(f.choose(&none, &model("x:latest")).unwrap(), 0);
    f.member(1).unwrap().set_loaded(set(&["x:latest"]));
    assert_eq!(f.choose(&none, &model("x:latest")).unwrap(), 1);
    // Nobody has it: the first healthy one answers (Ollama's 404).
    f.member(0).unwrap().failed("down");
    assert_eq!(f.choose(&none, &model("z:latest")).unwrap(), 1);
    // The preferred one, while it is healthy and has the model.
    let preferred = Target::Model {
        name: "x:latest".into(),
        prefer: Some(0),
        affinity: None,
    };
    assert_eq!(f.choose(&none, &preferred).unwrap(), 1);
    f.member(0).unwrap().answered();
    assert_eq!(f.choose(&none, &preferred).unwrap(), 0);
}

#[test]
fn a_static_model_list_is_kept() {
    let mut spec = UpstreamSpec::from_url("http://127.0.0.1:1").unwrap();
    spec.models = Some(vec!["x:latest".into()]);
    let config = Config {
        upstreams: vec![spec],
        ..Config::default()
    };
    let f = Fleet::new(&config).unwrap();
    f.member(0).unwrap().set_models(set(&["y:latest"]));
    assert_eq!(f.member(0).unwrap().has("x:latest"), member::Has::Yes);
    assert_eq!(f.member(0).unwrap().has("y:latest"), member::Has::No);
}

#[test]
fn connections_opened_ahead_follow_each_upstreams_setting() {
    let mut specs: Vec<UpstreamSpec> = (1..=3)
        .map(|port| UpstreamSpec::from_url(&format!("http://127.0.0.1:{port}")).unwrap())
        .collect();
    specs[1].warm_connections = Some(0);
    specs[2].warm_connections = Some(2);
    let config = Config {
        upstreams: specs,
        warm_connections: 16,
        ..Config::default()
    };
    let totals: Vec<Ahead> = ahead(&config).to_vec();
    assert_eq!(
        totals,
        [
            Ahead { floor: 4, cap: 16 },
            Ahead::default(),
            Ahead { floor: 2, cap: 2 }
        ]
    );
    let few = Config {
        max_connections: 3,
        ..config
    };
    assert_eq!(
        ahead(&few)[0],
        Ahead { floor: 3, cap: 3 },
        "within max_connections"
    );
}
