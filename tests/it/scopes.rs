//! A shared box, safe by default: API-key scopes on every route and
//! spelling (`generate`, `read`, `manage`), the anonymous default, the
//! admin token, and the refusal to start with an open door.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{
    client,
    live::{Live, bounded, sha256_hex},
};
use reqwest::Method;
use serde_json::{Value, json};

const USER: &str = "user-key";
const OPS: &str = "ops-key";
const READER: &str = "reader-key";

fn policy() -> String {
    format!(
        "auth:\n  required: true\n  keys:\n    - {{id: user, key_sha256: {}}}\n    - {{id: ops, key_sha256: {}, scopes: [generate, read, manage]}}\n    - {{id: reader, key_sha256: {}, scopes: [read]}}\n",
        sha256_hex(USER),
        sha256_hex(OPS),
        sha256_hex(READER)
    )
}

/// Every management route, in the spellings Ollama routes alike.
fn management() -> Vec<(Method, &'static str, Value)> {
    let pull = json!({"model": "llama3.2"});
    vec![
        (Method::POST, "/api/pull", pull.clone()),
        (Method::POST, "//api/%70ull", pull.clone()),
        (Method::POST, "/api/pull/", pull.clone()),
        (Method::POST, "/api/push", pull.clone()),
        (
            Method::POST,
            "/api/create",
            json!({"model": "mine", "from": "llama3.2"}),
        ),
        (
            Method::POST,
            "/api/copy",
            json!({"source": "llama3.2", "destination": "x"}),
        ),
        (Method::DELETE, "/api/delete", json!({"model": "llama3.2"})),
        (
            Method::DELETE,
            "/api/%64elete",
            json!({"model": "llama3.2"}),
        ),
        (Method::POST, "/api/blobs/sha256:00", json!({})),
        (Method::HEAD, "/api/blobs/sha256:00", json!({})),
        // Paths augur does not know reach the upstream only with manage.
        (Method::POST, "/api/unknown", json!({})),
        (Method::GET, "/v1/files", json!({})),
    ]
}

async fn send(
    live: &Live,
    method: Method,
    path: &str,
    body: &Value,
    key: Option<&str>,
) -> reqwest::Response {
    let mut req = client().request(method.clone(), live.url(path));
    if method != Method::GET && method != Method::HEAD {
        req = req.json(body);
    }
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn management_needs_the_manage_scope_on_every_route_and_spelling() {
    bounded(60, async {
        let live = Live::start(&policy()).await;
        for (method, path, body) in management() {
            for key in [USER, READER] {
                let before = live.fake.total_requests();
                let r = send(&live, method.clone(), path, &body, Some(key)).await;
                assert_eq!(r.status(), 403, "{method} {path} with {key}");
                if method != Method::HEAD {
                    let v: Value = r.json().await.unwrap();
                    let text = v["error"].as_str().or(v["error"]["message"].as_str());
                    assert!(text.unwrap().contains("\"manage\" scope"), "{v}");
                }
                assert_eq!(
                    live.fake.total_requests(),
                    before,
                    "{method} {path}: forwarded"
                );
            }
            let r = send(&live, method.clone(), path, &body, Some(OPS)).await;
            assert_ne!(r.status(), 403, "{method} {path} with the manage scope");
        }
    })
    .await;
}

#[tokio::test]
async fn generate_and_read_follow_the_keys_scopes() {
    bounded(30, async {
        let live = Live::start(&policy()).await;
        let chat = json!({"model": "llama3.2", "stream": false,
            "messages": [{"role": "user", "content": "hi"}]});
        let tags = json!({});
        // The default scopes: generate and read.
        assert_eq!(
            send(&live, Method::POST, "/api/chat", &chat, Some(USER))
                .await
                .status(),
            200
        );
        assert_eq!(
            send(&live, Method::GET, "/api/tags", &tags, Some(USER))
                .await
                .status(),
            200
        );
        // read only: listings yes, generation no, in each surface's shape.
        assert_eq!(
            send(&live, Method::GET, "/api/tags", &tags, Some(READER))
                .await
                .status(),
            200
        );
        assert_eq!(
            send(&live, Method::GET, "/v1/models", &tags, Some(READER))
                .await
                .status(),
            200
        );
        let r = send(&live, Method::POST, "/api/chat", &chat, Some(READER)).await;
        assert_eq!(r.status(), 403);
        assert!(r.json::<Value>().await.unwrap()["error"].is_string());
        let r = send(
            &live,
            Method::POST,
            "/v1/chat/completions",
            &chat,
            Some(READER),
        )
        .await;
        assert_eq!(r.status(), 403);
        assert!(r.json::<Value>().await.unwrap()["error"]["message"].is_string());
        let r = send(&live, Method::POST, "/v1/messages", &chat, Some(READER)).await;
        assert_eq!(r.status(), 403);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["type"], "error", "{v}");
        // Liveness needs nothing.
        assert_eq!(
            send(&live, Method::GET, "/", &tags, None).await.status(),
            200
        );
    })
    .await;
}

#[tokio::test]
async fn anonymous_callers_get_generate_and_read_unless_the_policy_says_otherwise() {
    bounded(30, async {
        let live = Live::start("{}").await;
        let chat = json!({"model": "llama3.2", "stream": false,
            "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(
            send(&live, Method::POST, "/api/chat", &chat, None)
                .await
                .status(),
            200
        );
        assert_eq!(
            send(&live, Method::GET, "/api/tags", &chat, None)
                .await
                .status(),
            200
        );
        let r = send(
            &live,
            Method::DELETE,
            "/api/delete",
            &json!({"model": "llama3.2"}),
            None,
        )
        .await;
        assert_eq!(r.status(), 403);
        let text = r.json::<Value>().await.unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(text.contains("without an API key"), "{text}");
        live.apply("auth:\n  anonymous_scopes: [generate, read, manage]\n")
            .await;
        let r = send(
            &live,
            Method::POST,
            "/api/pull",
            &json!({"model": "llama3.2", "stream": false}),
            None,
        )
        .await;
        assert_eq!(r.status(), 200);
        live.apply("auth:\n  anonymous_scopes: [generate]\n").await;
        assert_eq!(
            send(&live, Method::GET, "/api/tags", &chat, None)
                .await
                .status(),
            403
        );
        assert_eq!(
            send(&live, Method::POST, "/api/chat", &chat, None)
                .await
                .status(),
            200
        );
        // An unknown scope rejects the file; the last good policy stays.
        live.rewrite("auth:\n  anonymous_scopes: [everything]\n");
        tokio::time::sleep(Duration::from_millis(600)).await;
        let status = live.augur.state.policies.status();
        let error = status.last_error.unwrap();
        assert!(error.contains("everything"), "{error}");
        assert_eq!(
            send(&live, Method::POST, "/api/chat", &chat, None)
                .await
                .status(),
            200
        );
    })
    .await;
}

#[tokio::test]
async fn the_admin_token_guards_everything_but_healthy() {
    bounded(30, async {
        let fake = fake_ollama::FakeOllama::builder().start().await;
        let augur = common::start_with(&fake.url(), |c| {
            c.admin_token = Some(augur::config::Secret::new("s3cret"));
        })
        .await;
        let admin = augur.admin().await;
        let get = |path: &str, token: Option<&str>| {
            let mut req = client().get(format!("{admin}{path}"));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            req.send()
        };
        assert_eq!(get("/-/healthy", None).await.unwrap().status(), 200);
        for path in ["/-/ready", "/metrics", "/-/policies", "/-/upstreams"] {
            assert_eq!(get(path, None).await.unwrap().status(), 401, "{path}");
            assert_eq!(
                get(path, Some("wrong")).await.unwrap().status(),
                401,
                "{path}"
            );
            assert_eq!(
                get(path, Some("s3cret")).await.unwrap().status(),
                200,
                "{path}"
            );
        }
    })
    .await;
}

/// The real binary, started as `args`; its exit status and stderr, or
/// `None` if it was still running after a few seconds (it was serving).
fn start(args: &[&str], env: &[(&str, &str)]) -> Option<(i32, String)> {
    let policies = tempfile::tempdir().unwrap();
    std::fs::write(policies.path().join("00-empty.yaml"), "{}\n").unwrap();
    start_with(policies.path(), args, env)
}

/// [`start`] with the policies in `policies`.
fn start_with(
    policies: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<(i32, String)> {
    let mut cmd = common::augur_bin();
    cmd.args(["--upstream", "http://127.0.0.1:9", "--policies"])
        .arg(policies)
        .args(args)
        .env_remove("AUGUR_ALLOW_UNAUTHENTICATED")
        .env_remove("AUGUR_ADMIN_TOKEN")
        .env_remove("AUGUR_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return Some((status.code().unwrap_or(-1), err));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_public_address_with_no_keys_refuses_to_start_unless_told() {
    let port = common::free_port().to_string();
    let admin = common::free_port().to_string();
    let public = format!("0.0.0.0:{port}");
    let local_admin = format!("127.0.0.1:{admin}");
    let (code, err) = start(&["--listen", &public, "--admin-listen", &local_admin], &[]).unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("--allow-unauthenticated"), "{err}");
    // The operator's word, as a flag or in the environment.
    assert!(
        start(
            &[
                "--listen",
                &public,
                "--admin-listen",
                &local_admin,
                "--allow-unauthenticated"
            ],
            &[]
        )
        .is_none()
    );
    let env = [("AUGUR_ALLOW_UNAUTHENTICATED", "true")];
    assert!(start(&["--listen", &public, "--admin-listen", &local_admin], &env).is_none());
    // A public admin listener needs its token.
    let public_admin = format!("0.0.0.0:{admin}");
    let local = format!("127.0.0.1:{port}");
    let (code, err) = start(&["--listen", &local, "--admin-listen", &public_admin], &[]).unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("AUGUR_ADMIN_TOKEN"), "{err}");
    assert!(!err.contains("s3cret"));
    let env = [("AUGUR_ADMIN_TOKEN", "s3cret")];
    assert!(start(&["--listen", &local, "--admin-listen", &public_admin], &env).is_none());
}

/// The container image's settings (`0.0.0.0` for both listeners, the
/// policies of `configs/docker/policies`): it starts only with an API key
/// and an admin token, as its README section says.
#[test]
fn the_container_settings_need_a_key_and_an_admin_token() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let policies = root.join("configs/docker/policies");
    let listen = format!("0.0.0.0:{}", common::free_port());
    let admin = format!("0.0.0.0:{}", common::free_port());
    let args = [
        "--listen",
        listen.as_str(),
        "--admin-listen",
        admin.as_str(),
    ];
    let (code, err) = start_with(&policies, &args, &[("AUGUR_ADMIN_TOKEN", "t")]).unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("AUGUR_API_KEY"), "{err}");
    let (code, err) = start_with(&policies, &args, &[("AUGUR_API_KEY", "k")]).unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("AUGUR_ADMIN_TOKEN"), "{err}");
    let both = [("AUGUR_API_KEY", "k"), ("AUGUR_ADMIN_TOKEN", "t")];
    assert!(start_with(&policies, &args, &both).is_none());
}
