use serde_json::json;

use super::*;
use crate::guard::{RawGuard, compile, read_arguments, values::MAX_MATCHES};

fn guard(yaml: &str) -> Guard {
    let raw: RawGuard = yaml_serde::from_str(yaml).unwrap();
    compile(&raw).unwrap()
}

#[test]
fn names_are_allowed_and_denied_by_globs() {
    let g = guard("deny: ['shell_*']\nallow: ['get_*', 'shell_ls', 'fetch_url']\n");
    assert!(g.offers("get_weather"));
    assert!(!g.offers("shell_ls"), "deny wins");
    assert!(!g.offers("delete_all"), "not allowed");
    let v = g.judge("shell_rm", &json!({}));
    assert!(v.blocked());
    assert_eq!(v.findings[0].rule, "deny");
    assert!(!g.judge("get_time", &json!({})).blocked());
}

#[test]
fn private_urls_are_blocked_and_public_ones_pass() {
    let g = guard("rules:\n  - id: ssrf\n    pointer: /url\n    url: {block_private: true}\n");
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://0x7f.1/",
        "http://evil.com@127.0.0.1/",
        "http://[::ffff:10.0.0.1]/",
    ] {
        let v = g.judge("fetch_url", &json!({"url": url}));
        assert!(v.blocked(), "{url}");
        assert_eq!(v.findings[0].rule, "ssrf");
        assert!(!v.findings[0].why.contains(url), "the value is not echoed");
    }
    assert!(
        g.judge("fetch_url", &json!({"url": "https://example.com/a"}))
            .findings
            .is_empty()
    );
    assert!(
        g.judge("fetch_url", &json!({"other": 1}))
            .findings
            .is_empty(),
        "absent"
    );
}

#[test]
fn url_schemes_and_hosts_narrow_further() {
    let g = guard(
        "rules:\n  - pointer: /url\n    url: {schemes: [https], hosts: ['*.example.com', example.com]}\n    action: flag\n",
    );
    let judge = |u: &str| g.judge("fetch", &json!({"url": u}));
    assert!(judge("https://docs.example.com/x").findings.is_empty());
    assert!(judge("https://example.com/").findings.is_empty());
    let v = judge("http://docs.example.com/");
    assert!(v.flagged() && !v.blocked());
    assert!(judge("https://example.org/").flagged());
    assert!(judge("https://example.com.evil.org/").flagged());
}

#[test]
fn numbers_lengths_enums_and_patterns() {
    let g = guard(
        "rules:\n  - id: qty\n    tool: npc_give_item\n    pointer: /items/*/qty\n    minimum: 1\n    maximum: 10\n  - id: item\n    pointer: /items/*/name\n    enum: [sword, shield]\n  - id: short\n    pointer: /note\n    max_length: 5\n    action: log\n  - id: code\n    pointer: /code\n    pattern: '^[A-Z]{3}$'\n",
    );
    let ok = json!({"items": [{"name": "sword", "qty": 1}, {"name": "shield", "qty": 10}]});
    assert!(g.judge("npc_give_item", &ok).findings.is_empty());
    let v = g.judge(
        "npc_give_item",
        &json!({"items": [{"name": "sword", "qty": 999}]}),
    );
    assert_eq!(v.findings[0].rule, "qty");
    assert!(
        v.findings[0].why.contains("/items/0/qty"),
        "{}",
        v.findings[0].why
    );
    // The qty rule is for one tool only.
    assert!(
        g.judge("other", &json!({"items": [{"qty": 999}]}))
            .findings
            .is_empty()
    );
    let v = g.judge("x", &json!({"items": [{"name": "legendary_sword"}]}));
    assert_eq!(v.findings[0].rule, "item");
    let v = g.judge("x", &json!({"note": "too long"}));
    assert!(!v.blocked() && !v.flagged() && v.findings.len() == 1, "log");
    assert_eq!(
        g.judge("x", &json!({"code": "ABCD"})).findings[0].rule,
        "code"
    );
    assert!(g.judge("x", &json!({"code": "ABC"})).findings.is_empty());
}

#[tokio::test]
async fn names_are_resolved_only_when_the_rule_asks() {
    let plain = guard("rules:\n  - id: ssrf\n    pointer: /url\n    url: {block_private: true}\n");
    let resolving = guard(
        "rules:\n  - id: ssrf\n    pointer: /url\n    url: {block_private: true, resolve: true, resolve_timeout_ms: 300}\n",
    );
    let unresolvable = Arguments::Read(json!({"url": "https://no-such-host.invalid/x"}));
    assert!(
        plain
            .judge_resolving("fetch", &unresolvable)
            .await
            .findings
            .is_empty()
    );
    let v = resolving.judge_resolving("fetch", &unresolvable).await;
    assert!(v.blocked(), "{v:?}");
    assert!(v.findings[0].why.contains("unresolved"), "{v:?}");
    // Addresses need no resolving, and a spelled-out private one is
    // refused either way.
    assert!(
        resolving
            .judge_resolving("fetch", &Arguments::Read(json!({"url": "http://8.8.8.8/"})))
            .await
            .findings
            .is_empty()
    );
    assert!(
        resolving
            .judge_resolving(
                "fetch",
                &Arguments::Read(json!({"url": "http://10.0.0.1/"}))
            )
            .await
            .blocked()
    );
}

#[test]
fn enum_rules_are_written_into_the_tools_schema() {
    let g = guard(
        "rules:\n  - tool: give\n    pointer: /items/*/name\n    enum: [bread, map]\n  - pointer: /mode\n    enum: [a]\n  - pointer: /nowhere/x\n    enum: [1]\n",
    );
    let mut params = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "mode": {"type": "string"}}});
    assert!(g.narrow_parameters("give", &mut params));
    assert_eq!(
        params["properties"]["items"]["items"]["properties"]["name"]["enum"],
        json!(["bread", "map"])
    );
    assert_eq!(params["properties"]["mode"]["enum"], json!(["a"]));
    let mut other = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}});
    assert!(
        !g.narrow_parameters("take", &mut other),
        "the first rule is for `give` only"
    );
    assert!(
        other["properties"]["items"]["items"]["properties"]["name"]
            .get("enum")
            .is_none()
    );
}

#[test]
fn paths_are_normalized_before_the_prefix_is_checked() {
    let g = guard("rules:\n  - pointer: /path\n    path_prefix: [/srv/data]\n");
    let blocked = |p: &str| g.judge("read_file", &json!({"path": p})).blocked();
    assert!(!blocked("/srv/data/a.txt"));
    assert!(!blocked("/srv/data"));
    assert!(!blocked("/srv//data/./x/../b"));
    for p in [
        "/etc/shadow",
        "/srv/data/../../etc/shadow",
        "/srv/data/%2e%2e/%2e%2e/etc/shadow",
        "/srv/data/%252e%252e/secret",
        "/srv/data/..\\..\\etc",
        "/srv/database/x",
        "srv/data/x",
        "../../etc/passwd",
        "/srv/data/\u{0}x",
    ] {
        assert!(blocked(p), "{p:?}");
    }
}

#[test]
fn risk_levels_come_from_globs_the_highest_winning() {
    let g = guard("risk: {'npc_*': medium, npc_give_item: high}\n");
    assert_eq!(g.judge("npc_give_item", &json!({})).risk, Some(Risk::High));
    assert_eq!(g.judge("npc_say", &json!({})).risk, Some(Risk::Medium));
    assert_eq!(g.judge("get_time", &json!({})).risk, None);
}

#[test]
fn bad_guards_are_refused_with_the_key_at_fault() {
    let bad = |y: &str| {
        let raw: RawGuard = yaml_serde::from_str(y).unwrap();
        compile(&raw).unwrap_err()
    };
    assert!(bad("rules:\n  - pointer: /x\n").contains("needs a check"));
    assert!(bad("rules:\n  - pointer: x\n    enum: [1]\n").contains("must start with"));
    assert!(bad("rules:\n  - pointer: /x\n    pattern: '('\n").contains("rules[0].pattern"));
    assert!(bad("rules:\n  - pointer: /x\n    enum: [1]\n    action: drop\n").contains("action"));
    assert!(bad("risk: {a: extreme}\n").contains("risk.a"));
    assert!(bad("deny: ['a[']\n").contains("deny"));
}

/// A URL its readers disagree on is refused under `ambiguous_url` by
/// every `url` rule, whatever else the rule says and whatever its action.
#[test]
fn ambiguous_urls_are_refused_by_every_url_rule() {
    let g = guard(
        "rules:\n  - id: api\n    pointer: /url\n    url: {hosts: [api.example.com], block_private: false}\n    action: log\n",
    );
    let judge = |u: &str| g.judge("fetch", &json!({"url": u}));
    assert!(
        judge("https://api.example.com/v1/items")
            .findings
            .is_empty()
    );
    for url in [
        "http://api.example.com\\@127.0.0.1/",
        "https://api.example.com\\@evil.com/",
        "http:api.example.com/",
        "http://a@api.example.com@evil.com/",
        "http://api.example.com%2f@evil.com/",
    ] {
        let v = judge(url);
        assert!(v.blocked(), "{url}: {v:?}");
        assert_eq!(v.findings[0].rule, "ambiguous_url", "{url}");
        assert!(v.findings[0].why.contains("disagree"), "{v:?}");
    }
    let long = format!(
        "https://api.example.com/{}",
        "a".repeat(crate::guard::ssrf::MAX_URL)
    );
    let v = judge(&long);
    assert!(
        v.blocked() && v.findings[0].rule == "unreadable_arguments",
        "{v:?}"
    );
}

/// Past the bound of values one rule checks, the call is refused rather
/// than passed with values unchecked: in an array and under `*` keys.
#[test]
fn values_past_the_bound_refuse_the_call() {
    let g = guard(
        "rules:\n  - id: ssrf\n    pointer: /urls/*\n    url: {block_private: true}\n    action: flag\n",
    );
    let public = |n: usize| vec![json!("https://example.com/"); n];
    let mut urls = public(MAX_MATCHES);
    assert!(g.judge("fetch", &json!({"urls": urls})).findings.is_empty());
    urls.push(json!("http://169.254.169.254/"));
    let v = g.judge("fetch", &json!({"urls": urls}));
    assert!(v.blocked(), "{v:?}");
    assert_eq!(v.findings[0].rule, "unreadable_arguments");
    assert!(v.findings[0].why.contains("/urls/*"), "{v:?}");
    let keys: serde_json::Map<String, serde_json::Value> = (0..=MAX_MATCHES)
        .map(|i| (format!("k{i}"), json!("https://example.com/")))
        .collect();
    assert!(g.judge("fetch", &json!({"urls": keys})).blocked());
}

/// Arguments no reader reads alike refuse the call when a rule would read
/// them; lenient readings are judged as the client reads them.
#[tokio::test]
async fn arguments_are_judged_as_the_client_reads_them() {
    let g = guard(
        "rules:\n  - id: ssrf\n    tool: fetch\n    pointer: /url\n    url: {block_private: true}\n  - id: qty\n    tool: give\n    pointer: /qty\n    maximum: 10\n",
    );
    let judge = |name: &'static str, text: &'static str| {
        let args = read_arguments(Some(&json!(text)));
        let g = g.clone();
        async move { g.judge_resolving(name, &args).await }
    };
    let v = judge("fetch", r#"{"url": "http://169.254.169.254/", "n": NaN}"#).await;
    assert_eq!(v.findings[0].rule, "ssrf", "{v:?}");
    for qty in [
        r#"{"qty": 1e400}"#,
        r#"{"qty": Infinity}"#,
        r#"{"qty": NaN}"#,
    ] {
        let v = judge("give", qty).await;
        assert_eq!(v.findings[0].rule, "qty", "{qty}: {v:?}");
    }
    assert!(
        judge("give", r#"{"qty": -Infinity}"#)
            .await
            .findings
            .is_empty()
    );
    let v = judge(
        "fetch",
        r#"{"url": "https://example.com/", "url": "http://127.0.0.1/"}"#,
    )
    .await;
    assert!(
        v.blocked() && v.findings[0].rule == "unreadable_arguments",
        "{v:?}"
    );
    assert!(
        judge("fetch", "{'url': 'http://127.0.0.1/'}")
            .await
            .blocked()
    );
    assert!(
        judge("other", "{'url': 'http://127.0.0.1/'}")
            .await
            .findings
            .is_empty(),
        "no rule reads another tool's arguments"
    );
    assert!(judge("fetch", "").await.findings.is_empty(), "no arguments");
}

#[tokio::test]
async fn more_names_than_are_resolved_refuse_the_call() {
    let g = guard(
        "rules:\n  - id: ssrf\n    pointer: /urls/*\n    url: {resolve: true, resolve_timeout_ms: 10}\n    action: log\n",
    );
    let urls: Vec<String> = (0..=MAX_RESOLVED)
        .map(|i| format!("https://{i}.localhost.example.invalid/"))
        .collect();
    let v = g
        .judge_resolving("fetch", &Arguments::Read(json!({"urls": urls})))
        .await;
    assert!(v.blocked(), "{v:?}");
}

/// A key that a case-blind reader (Go, .NET) takes for the rule's is
/// checked too.
#[test]
fn keys_that_differ_only_in_case_are_checked_too() {
    let g =
        guard("rules:\n  - id: ssrf\n    pointer: /target/url\n    url: {block_private: true}\n");
    for args in [
        json!({"target": {"url": "https://example.com/", "URL": "http://127.0.0.1/"}}),
        json!({"TARGET": {"Url": "http://127.0.0.1/"}}),
        json!({"target": {"\u{17f}url": "x", "ur\u{212a}": "y", "uRl": "http://10.0.0.1/"}}),
    ] {
        assert!(g.judge("fetch", &args).blocked(), "{args}");
    }
    assert!(
        g.judge(
            "fetch",
            &json!({"target": {"url": "https://example.com/", "urls": "http://127.0.0.1/"}})
        )
        .findings
        .is_empty()
    );
}
