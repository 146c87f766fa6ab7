//! Unit tests of `traces`.

use super::*;

fn file(text: &str) -> FileTraces {
    toml::from_str(text).unwrap()
}

fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| {
        pairs
            .iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| v.to_string())
    }
}

#[test]
fn traces_are_off_without_an_endpoint() {
    assert_eq!(resolve(file(""), vars(&[])).unwrap(), None);
    let disabled = vars(&[
        ("OTEL_SDK_DISABLED", "true"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
    ]);
    assert_eq!(resolve(file(""), disabled).unwrap(), None);
}

#[test]
fn the_environment_wins_over_the_file() {
    let f = || file("endpoint = \"http://file:4318/\"\nqueue_size = 10\n");
    let s = resolve(f(), vars(&[])).unwrap().unwrap();
    assert_eq!(s.endpoint, "http://file:4318/v1/traces");
    assert_eq!(s.queue_size, 10);
    let env = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]);
    let s = resolve(f(), env).unwrap().unwrap();
    assert_eq!(s.endpoint, "http://env:4318/v1/traces");
    let env = vars(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
    ]);
    let s = resolve(f(), env).unwrap().unwrap();
    assert_eq!(s.endpoint, "http://t:1/x", "the signal's endpoint as it is");
}

#[test]
fn the_shipped_config_file_holds_the_defaults() {
    let text = include_str!("../../configs/augur.toml");
    let file: toml::Table = toml::from_str(text).unwrap();
    let section = || -> FileTraces { file["traces"].clone().try_into().unwrap() };
    assert_eq!(resolve(section(), vars(&[])).unwrap(), None);
    let mut traces = section();
    traces.endpoint = Some("http://c:4318".into());
    let s = resolve(traces, vars(&[])).unwrap().unwrap();
    assert_eq!(s, TraceSettings::new("http://c:4318/v1/traces"));
}

#[test]
fn an_endpoint_that_is_not_a_url_is_refused() {
    for endpoint in ["collector:4318", "https://collector:4318"] {
        let pairs = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)];
        assert!(resolve(file(""), vars(&pairs)).is_err(), "{endpoint}");
    }
}
