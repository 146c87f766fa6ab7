//! Config resolution: defaults, the shipped file, precedence, the limit store.

use super::*;
use crate::config::TlsFlags;

#[test]
fn defaults_match_the_documented_ones() {
    let c = Config::from_toml(&Cli::default(), "").unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:11435");
    assert_eq!(c.admin_listen.to_string(), "127.0.0.1:11436");
    assert_eq!(c.upstreams.len(), 1);
    assert_eq!(c.upstreams[0].url.to_string(), "http://127.0.0.1:11434/");
    assert_eq!(c.health_interval, Duration::from_secs(5));
    assert_eq!(c.policies, PathBuf::from("./policies"));
    assert_eq!(c.body_limit, 64 * 1024 * 1024);
    assert_eq!(c.first_byte_timeout, Duration::from_secs(300));
    assert_eq!(c.schema_cache_bytes, 32 * 1024 * 1024);
    assert_eq!(c.format_limit, 256 * 1024);
    assert_eq!(c.listing_timeout, Duration::from_secs(10));
    assert_eq!(c.warm_connections, 16);
    let c = Config::from_toml(&Cli::default(), "[upstream]\nlisting_timeout_ms = 250\n").unwrap();
    assert_eq!(c.listing_timeout, Duration::from_millis(250));
    let c = Config::from_toml(&Cli::default(), "[upstream]\nwarm_connections = 0\n").unwrap();
    assert_eq!(c.warm_connections, 0);
}

#[test]
fn the_shipped_config_file_holds_the_defaults() {
    let text = include_str!("../../configs/augur.toml");
    let c = Config::from_toml(&Cli::default(), text).unwrap();
    let d = Config::default();
    assert_eq!(c.listen, d.listen);
    assert_eq!(c.admin_listen, d.admin_listen);
    assert_eq!(c.upstreams, d.upstreams);
    assert_eq!(c.health_interval, d.health_interval);
    assert_eq!(c.models_refresh, d.models_refresh);
    assert_eq!(c.listing_timeout, d.listing_timeout);
    assert_eq!(c.body_limit, d.body_limit);
    assert_eq!(c.stream_buffer_limit, d.stream_buffer_limit);
    assert_eq!(c.schema_cache_bytes, d.schema_cache_bytes);
    assert_eq!(c.format_limit, d.format_limit);
    assert_eq!(c.first_byte_timeout, d.first_byte_timeout);
    assert_eq!(c.idle_timeout, d.idle_timeout);
    assert_eq!(c.warm_connections, d.warm_connections);
    assert_eq!(c.drain_timeout, d.drain_timeout);
    assert_eq!(c.client_header_timeout, d.client_header_timeout);
    assert_eq!(c.connect_timeout, d.connect_timeout);
    assert_eq!(c.capabilities_ttl, d.capabilities_ttl);
    assert_eq!(c.max_connections, d.max_connections);
    assert_eq!(c.forward_client_auth, d.forward_client_auth);
    assert_eq!(c.log_format, d.log_format);
    assert_eq!(c.limit_store, d.limit_store);
    assert_eq!(c.limit_store_timeout, d.limit_store_timeout);
    assert_eq!(c.limit_key_prefix, d.limit_key_prefix);
    assert_eq!(c.tls, d.tls);
    assert_eq!(c.admin_tls, d.admin_tls);
}

#[test]
fn flags_win_over_the_file() {
    let cli = Cli {
        listen: Some("127.0.0.1:9000".parse().unwrap()),
        ..Cli::default()
    };
    let c = Config::from_toml(
        &cli,
        "[server]\nlisten = \"127.0.0.1:8000\"\nbody_limit_bytes = 10\n[upstream]\nurl = \"http://10.0.0.1:11434/\"\n",
    )
    .unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:9000");
    assert_eq!(c.body_limit, 10);
    assert_eq!(
        c.upstreams[0].url.authority().unwrap().as_str(),
        "10.0.0.1:11434"
    );
}

#[test]
fn unknown_keys_and_bad_urls_are_rejected() {
    assert!(Config::from_toml(&Cli::default(), "[server]\nlisten_port = 1\n").is_err());
    assert!(Config::from_toml(&Cli::default(), "[upstream]\nurl = \"https://x\"\n").is_err());
    assert!(Config::from_toml(&Cli::default(), "[upstream]\nurl = \"127.0.0.1\"\n").is_err());
    for bad in [
        "redis",
        "http://127.0.0.1:6379",
        "rediss://127.0.0.1:6380/0#insecure",
        "redis://127.0.0.1/0#x",
        "redis://:x",
    ] {
        let text = format!("[limits]\nstore = \"{bad}\"\n");
        assert!(Config::from_toml(&Cli::default(), &text).is_err(), "{bad}");
    }
    let bad_prefix = "[limits]\nkey_prefix = \"a b\"\n";
    assert!(Config::from_toml(&Cli::default(), bad_prefix).is_err());
}

#[test]
fn the_limit_store_is_memory_or_a_redis_url() {
    let c = Config::from_toml(&Cli::default(), "").unwrap();
    assert_eq!(c.limit_store, LimitStore::Memory);
    assert_eq!(c.limit_store_timeout, Duration::from_millis(50));
    let text = "[limits]\nstore = \"redis://127.0.0.1:6380/2\"\nstore_timeout_ms = 20\nkey_prefix = \"team-a\"\n";
    let c = Config::from_toml(&Cli::default(), text).unwrap();
    assert_eq!(
        c.limit_store,
        LimitStore::Redis {
            url: "redis://127.0.0.1:6380/2".into()
        }
    );
    assert_eq!(c.limit_store_timeout, Duration::from_millis(20));
    assert_eq!(c.limit_key_prefix, "team-a");
    for tls in [
        "rediss://cache.example:6380/0",
        "valkeys://user:pw@cache.example/1",
    ] {
        let text = format!("[limits]\nstore = \"{tls}\"\n");
        let c = Config::from_toml(&Cli::default(), &text).unwrap();
        assert_eq!(c.limit_store, LimitStore::Redis { url: tls.into() });
    }
}

#[test]
fn tls_files_come_in_pairs_from_flags_or_the_file() {
    let c = Config::from_toml(&Cli::default(), "").unwrap();
    assert_eq!((c.tls, c.admin_tls), (None, None));
    let text = "[server]\ntls_cert = \"/etc/augur/tls.crt\"\ntls_key = \"/etc/augur/tls.key\"\n\
                admin_tls_cert = \"a.crt\"\nadmin_tls_key = \"a.key\"\n";
    let c = Config::from_toml(&Cli::default(), text).unwrap();
    let tls = c.tls.unwrap();
    assert_eq!(tls.cert, PathBuf::from("/etc/augur/tls.crt"));
    assert_eq!(tls.key, PathBuf::from("/etc/augur/tls.key"));
    assert_eq!(c.admin_tls.unwrap().key, PathBuf::from("a.key"));
    // A flag replaces the file's value of the same setting.
    let cli = Cli {
        tls: TlsFlags {
            cert: Some("/run/new.crt".into()),
            ..TlsFlags::default()
        },
        ..Cli::default()
    };
    let c = Config::from_toml(&cli, text).unwrap();
    let tls = c.tls.unwrap();
    assert_eq!(tls.cert, PathBuf::from("/run/new.crt"));
    assert_eq!(tls.key, PathBuf::from("/etc/augur/tls.key"));
    // One of a pair is refused, naming the missing one.
    for (text, missing) in [
        ("[server]\ntls_cert = \"c\"\n", "server.tls_key"),
        ("[server]\ntls_key = \"k\"\n", "server.tls_cert"),
        ("[server]\nadmin_tls_cert = \"c\"\n", "server.admin_tls_key"),
        (
            "[server]\ntls_cert = \"c\"\ntls_key = \"\"\n",
            "server.tls_key",
        ),
    ] {
        let e = Config::from_toml(&Cli::default(), text)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("but {missing}")), "{e}");
    }
}
