use serde_json::json;

use super::*;

fn parts<'a>(body: &'a Value) -> Parts<'a> {
    Parts {
        scope: Scope::Key("alice"),
        route: "/api/chat",
        body,
        stream: true,
        digest: "abc",
        policy_version: "v1",
    }
}

#[test]
fn canonical_form_sorts_keys_and_drops_whitespace() {
    let a: Value = serde_json::from_str(
        r#"{ "model": "m", "options": {"seed": 1, "temperature": 0},
            "messages": [{"role": "user", "content": "hi \"there\""}] }"#,
    )
    .unwrap();
    let b: Value = serde_json::from_str(
        r#"{"messages":[{"content":"hi \"there\"","role":"user"}],"options":{"temperature":0,"seed":1},"model":"m"}"#,
    )
    .unwrap();
    let expected = r#"{"messages":[{"content":"hi \"there\"","role":"user"}],"model":"m","options":{"seed":1,"temperature":0}}"#;
    assert_eq!(canonical(&a), expected);
    assert_eq!(canonical(&b), expected);
    assert_eq!(key(&parts(&a)), key(&parts(&b)));
    // Array order and values still count.
    assert_ne!(canonical(&json!([1, 2])), canonical(&json!([2, 1])));
    assert_ne!(canonical(&json!({"t": 0})), canonical(&json!({"t": 0.0})));
    assert_eq!(canonical(&json!({"k\n": null})), r#"{"k\n":null}"#);
}

#[test]
fn every_part_changes_the_key() {
    let body = json!({"model": "m"});
    let base = parts(&body);
    let k = key(&base);
    let other_body = json!({"model": "n"});
    let changed = [
        Parts {
            scope: Scope::Key("bob"),
            ..base
        },
        Parts {
            scope: Scope::Anonymous,
            ..base
        },
        Parts {
            scope: Scope::Group("alice"),
            ..base
        },
        Parts {
            route: "/api/generate",
            ..base
        },
        Parts {
            body: &other_body,
            ..base
        },
        Parts {
            stream: false,
            ..base
        },
        Parts {
            digest: "abd",
            ..base
        },
        Parts {
            policy_version: "v2",
            ..base
        },
    ];
    for p in changed {
        assert_ne!(key(&p), k, "{p:?}");
    }
    // Parts are length-prefixed: moving a byte from one to the next is
    // another key.
    let a = Parts {
        digest: "ab",
        policy_version: "cv1",
        ..base
    };
    let b = Parts {
        digest: "abc",
        policy_version: "v1",
        ..base
    };
    assert_ne!(key(&a), key(&b));
    // A key whose id reads like the anonymous namespace is not anonymous.
    let named = Parts {
        scope: Scope::Key("anonymous"),
        ..base
    };
    let anonymous = Parts {
        scope: Scope::Anonymous,
        ..base
    };
    assert_ne!(key(&named), key(&anonymous));
}
