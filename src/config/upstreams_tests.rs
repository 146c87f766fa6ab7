//! Unit tests of `upstreams`.

use super::*;
use crate::config::{Cli, Config};

fn names(c: &Config) -> Vec<&str> {
    c.upstreams.iter().map(|u| u.name.as_str()).collect()
}

#[test]
fn upstream_tables_are_read_with_their_defaults() {
    let text = "[upstream]\nconnect_timeout_ms = 700\n\
        [[upstreams]]\nurl = \"http://10.0.0.1:11434\"\nname = \"gpu1\"\nweight = 3\nmodels = [\"Gemma3\", \"qwen3:8b\"]\nfirst_byte_timeout_ms = 9000\nwarm_connections = 0\n\
        [[upstreams]]\nurl = \"http://10.0.0.2:11434/\"\n";
    let c = Config::from_toml(&Cli::default(), text).unwrap();
    assert_eq!(names(&c), ["gpu1", "10.0.0.2:11434"]);
    let first = &c.upstreams[0];
    assert_eq!(first.weight, 3);
    assert_eq!(
        first.models.as_deref().unwrap(),
        ["gemma3:latest", "qwen3:8b"]
    );
    assert_eq!(first.first_byte_timeout, Some(Duration::from_secs(9)));
    assert_eq!(first.connect_timeout, None);
    assert_eq!(first.warm_connections, Some(0));
    assert_eq!(c.connect_timeout, Duration::from_millis(700));
    let second = &c.upstreams[1];
    assert_eq!((second.weight, second.models.as_ref()), (1, None));
    assert_eq!(second.warm_connections, None);
}

#[test]
fn flags_replace_the_files_list() {
    let cli = Cli {
        upstream: vec![
            "a=http://127.0.0.1:1".into(),
            " http://127.0.0.1:2 ".into(),
            String::new(),
        ],
        ..Cli::default()
    };
    let c = Config::from_toml(&cli, "[[upstreams]]\nurl = \"http://10.0.0.1:11434\"\n").unwrap();
    assert_eq!(names(&c), ["a", "127.0.0.1:2"]);
    assert_eq!(c.upstreams[0].url.to_string(), "http://127.0.0.1:1/");
}

#[test]
fn the_flag_repeats_and_splits_on_commas() {
    use clap::Parser as _;
    let cli = Cli::try_parse_from([
        "augur",
        "--upstream",
        "gpu1=http://10.0.0.1:11434,http://10.0.0.2:11434",
        "--upstream",
        "http://10.0.0.3:11434",
    ])
    .unwrap();
    let c = Config::from_toml(&cli, "").unwrap();
    assert_eq!(names(&c), ["gpu1", "10.0.0.2:11434", "10.0.0.3:11434"]);
}

#[test]
fn the_single_forms_still_work() {
    let c =
        Config::from_toml(&Cli::default(), "[upstream]\nurl = \"http://10.0.0.9:1\"\n").unwrap();
    assert_eq!(names(&c), ["10.0.0.9:1"]);
    let c = Config::from_toml(&Cli::default(), "").unwrap();
    assert_eq!(names(&c), ["127.0.0.1:11434"]);
}

#[test]
fn bad_lists_are_refused() {
    let bad = |text: &str| {
        Config::from_toml(&Cli::default(), text)
            .unwrap_err()
            .to_string()
    };
    let dup = "[[upstreams]]\nurl = \"http://h:1\"\n[[upstreams]]\nurl = \"http://h:1/x\"\n";
    assert!(bad(dup).contains("distinct name"), "{}", bad(dup));
    let both = "[upstream]\nurl = \"http://h:1\"\n[[upstreams]]\nurl = \"http://h:2\"\n";
    assert!(bad(both).contains("not both"));
    assert!(bad("[[upstreams]]\nurl = \"http://h:1\"\nweight = 0\n").contains("weight"));
    assert!(bad("[[upstreams]]\nurl = \"http://h:1\"\nname = \"a b\"\n").contains("name"));
    assert!(bad("[[upstreams]]\nurl = \"https://h:1\"\n").contains("http://"));
    assert!(bad("[[upstreams]]\nname = \"x\"\n").contains("url"));
    let many: String = (0..=MAX_UPSTREAMS)
        .map(|i| format!("[[upstreams]]\nurl = \"http://h:{}\"\n", i + 1))
        .collect();
    assert!(bad(&many).contains("at most"));
}

#[test]
fn credentials_in_upstream_urls_are_refused_without_being_repeated() {
    for url in [
        "http://user:secret@10.0.0.1:11434",
        "http://secret@10.0.0.1:11434/prefix",
        "http://user:secret@10.0.0.1",
    ] {
        let e = UpstreamSpec::from_url(url).unwrap_err().to_string();
        assert!(e.contains("credentials"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        assert!(e.contains("***@10.0.0.1"), "{e}");
    }
    let file = "[[upstreams]]\nurl = \"http://u:secret@h:1\"\n";
    let e = Config::from_toml(&Cli::default(), file).unwrap_err();
    assert!(e.to_string().contains("credentials"), "{e}");
    let single = "[upstream]\nurl = \"http://u:secret@h:1\"\n";
    assert!(Config::from_toml(&Cli::default(), single).is_err());
    let cli = Cli {
        upstream: vec!["gpu=http://u:secret@h:1".into()],
        ..Cli::default()
    };
    let e = Config::from_toml(&cli, "").unwrap_err().to_string();
    assert!(e.contains("credentials") && !e.contains("secret"), "{e}");
    assert_eq!(without_userinfo("http://h:1/a@b"), "http://h:1/a@b");
}
