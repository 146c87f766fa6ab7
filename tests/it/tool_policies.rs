//! Tool policies end to end over real sockets with live policies: with
//! `emulate_tools: never` the upstream's refusal of tools is passed through
//! as it is, and with `advertise_capabilities: false` `/api/show` is the
//! upstream's own answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client,
    live::{Live, bounded},
};
use serde_json::{Value, json};

#[tokio::test]
async fn tool_policies_pass_the_upstreams_answers_through() {
    bounded(20, async {
        let live = Live::start(
            "models:\n  \"gemma3:*\":\n    emulate_tools: never\n    advertise_capabilities: false\n",
        )
        .await;
        let tool = json!({"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}});
        let body = json!({"model": "gemma3", "stream": false, "tools": [tool],
            "messages": [{"role": "user", "content": "Weather in Paris?"}]});
        let direct = client()
            .post(format!("{}/api/chat", live.fake.url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let (direct_status, direct_body) = (direct.status(), direct.text().await.unwrap());
        assert_eq!(direct_status, 400);
        assert!(direct_body.contains("does not support tools"), "{direct_body}");
        let r = client().post(live.url("/api/chat")).json(&body).send().await.unwrap();
        assert_eq!(r.status(), direct_status);
        assert_eq!(r.text().await.unwrap(), direct_body);

        let show = |model: &str| {
            client()
                .post(live.url("/api/show"))
                .json(&json!({"model": model}))
                .send()
        };
        let caps = |v: &Value| v["capabilities"].as_array().unwrap().clone();
        let v: Value = show("stream-cut").await.unwrap().json().await.unwrap();
        assert!(caps(&v).contains(&json!("tools")), "advertised by default: {v}");

        // advertise_capabilities: false: /api/show is the upstream's own.
        let direct = client()
            .post(format!("{}/api/show", live.fake.url()))
            .json(&json!({"model": "gemma3"}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let r = show("gemma3").await.unwrap();
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        assert_eq!(text, direct);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(!caps(&v).contains(&json!("tools")), "{v}");
    })
    .await;
}
