use std::time::Duration;

use super::*;
use crate::config::{Cli, Config, MAX_UPSTREAMS, UpstreamSpec};

fn refused(text: &str) -> String {
    Config::from_toml(&Cli::default(), text)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_dns_url_names_what_is_looked_up_with_the_defaults() {
    let spec = UpstreamSpec::from_url("dns+http://ollama-headless.ns.svc:11434/prefix").unwrap();
    assert_eq!(spec.name, "ollama-headless.ns.svc:11434");
    assert_eq!(
        spec.url.to_string(),
        "http://ollama-headless.ns.svc:11434/prefix"
    );
    let dns = spec.dns.as_ref().unwrap();
    assert_eq!(dns.host, "ollama-headless.ns.svc");
    assert_eq!((dns.port, dns.srv), (11434, false));
    assert_eq!(dns.interval, DEFAULT_INTERVAL);
    assert_eq!(dns.max_members, DEFAULT_MAX_MEMBERS);
    assert_eq!(spec.slots(), DEFAULT_MAX_MEMBERS);
    // No port: http's.
    let bare = UpstreamSpec::from_url("DNS+HTTP://ollama").unwrap();
    assert_eq!(bare.dns.unwrap().port, 80);
    // A plain URL is one upstream, as before.
    let plain = UpstreamSpec::from_url("http://10.0.0.1:11434").unwrap();
    assert_eq!((plain.slots(), plain.dns), (1, None));
}

#[test]
fn an_srv_url_takes_no_port() {
    let spec = UpstreamSpec::from_flag("gpus=dns+srv+http://_ollama._tcp.ns.svc").unwrap();
    assert_eq!(spec.name, "gpus");
    let dns = spec.dns.unwrap();
    assert_eq!((dns.host.as_str(), dns.srv), ("_ollama._tcp.ns.svc", true));
    let e = UpstreamSpec::from_url("dns+srv+http://_ollama._tcp.ns.svc:11434")
        .unwrap_err()
        .to_string();
    assert!(e.contains("SRV records"), "{e}");
}

#[test]
fn bad_dns_urls_are_refused() {
    for (url, says) in [
        ("dns+http://10.0.0.1:11434", "not an address"),
        ("dns+http://[::1]:11434", "not an address"),
        ("dns+https://ollama:11434", "supported"),
        ("dns+http://", "http"),
        ("dns+http://u:secret@ollama:1", "credentials"),
        ("dns+ftp://ollama", "supported"),
    ] {
        let e = UpstreamSpec::from_url(url).unwrap_err().to_string();
        assert!(e.contains(says), "{url}: {e}");
        assert!(!e.contains("secret"), "{e}");
    }
}

#[test]
fn table_settings_are_read_within_their_bounds() {
    let c = Config::from_toml(
        &Cli::default(),
        "[upstream]\ndns_server = \"127.0.0.1:5353\"\n\
         [[upstreams]]\nurl = \"dns+http://ollama:11434\"\nname = \"gpus\"\n\
         resolve_interval_ms = 5000\nmax_members = 4\n",
    )
    .unwrap();
    let dns = c.upstreams[0].dns.as_ref().unwrap();
    assert_eq!(dns.interval, Duration::from_secs(5));
    assert_eq!(dns.max_members, 4);
    assert_eq!(c.dns_server, Some("127.0.0.1:5353".parse().unwrap()));
    let table = |extra: &str| format!("[[upstreams]]\nurl = \"dns+http://ollama:1\"\n{extra}\n");
    assert!(refused(&table("resolve_interval_ms = 999")).contains("resolve_interval_ms"));
    assert!(refused(&table("resolve_interval_ms = 3600001")).contains("resolve_interval_ms"));
    assert!(refused(&table("max_members = 0")).contains("max_members"));
    assert!(refused(&table("max_members = 65")).contains("max_members"));
    let plain = "[[upstreams]]\nurl = \"http://h:1\"\nmax_members = 2\n";
    assert!(refused(plain).contains("dns+http://"), "{}", refused(plain));
    assert!(refused("[upstream]\ndns_server = \"ns.local:53\"\n").contains("dns_server"));
}

#[test]
fn members_count_against_the_upstream_bound() {
    // 63 static upstreams and a name of 2 members: 65.
    let mut text: String = (0..MAX_UPSTREAMS - 1)
        .map(|i| format!("[[upstreams]]\nurl = \"http://h:{}\"\n", i + 1))
        .collect();
    text.push_str("[[upstreams]]\nurl = \"dns+http://ollama:1\"\nmax_members = 2\n");
    assert!(refused(&text).contains("at most"), "{}", refused(&text));
    // With one member it fits.
    let fits = text.replace("max_members = 2", "max_members = 1");
    assert_eq!(
        Config::from_toml(&Cli::default(), &fits)
            .unwrap()
            .upstreams
            .len(),
        MAX_UPSTREAMS
    );
    // The default bound: four names of 16 fill it.
    let four: String = (0..4)
        .map(|i| format!("[[upstreams]]\nurl = \"dns+http://n{i}:1\"\n"))
        .collect();
    assert!(Config::from_toml(&Cli::default(), &four).is_ok());
    let five = format!("{four}[[upstreams]]\nurl = \"http://h:1\"\n");
    assert!(refused(&five).contains("at most"));
}
