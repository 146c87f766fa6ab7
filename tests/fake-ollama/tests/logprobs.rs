//! Token log-probabilities over real sockets: `logprobs` on `/api/chat`, `/api/generate` and
//! `/v1/chat/completions`, whole and streamed, with unsure spans and `top_logprobs`, and
//! nothing at all when a request does not ask for them.

use fake_ollama::{CONFIDENT, FakeOllama, tokens};
use serde_json::{Value, json};

mod common;

use common::{keys, post, user, weather_tool};

/// The `(token, probability)` pairs of a `logprobs` list, the probability rounded to 1e-6.
fn pairs(logprobs: &Value) -> Vec<(String, f64)> {
    let list = logprobs.as_array().expect("a logprobs list");
    list.iter()
        .map(|e| {
            let p = e["logprob"].as_f64().unwrap().exp();
            (e["token"].as_str().unwrap().to_owned(), round(p))
        })
        .collect()
}

fn round(p: f64) -> f64 {
    (p * 1e6).round() / 1e6
}

/// The token texts of a `logprobs` list, concatenated.
fn spelled(logprobs: &Value) -> String {
    pairs(logprobs).into_iter().map(|(t, _)| t).collect()
}

fn ask(model: &str, text: &str, extra: Value) -> Value {
    let mut v = json!({"model": model, "messages": user(text)});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[tokio::test]
async fn chat_stream_carries_each_chunks_tokens() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        "/api/chat",
        ask("qwen3", "why?", json!({"logprobs": true})),
    )
    .await;
    let lines = r.lines();
    let (done, chunks) = lines.split_last().unwrap();
    assert!(chunks.len() > 10, "{}", r.text());
    for chunk in chunks {
        let m = &chunk["message"];
        let text = format!(
            "{}{}",
            m["thinking"].as_str().unwrap_or(""),
            m["content"].as_str().unwrap()
        );
        assert_eq!(spelled(&chunk["logprobs"]), text);
        assert!(
            pairs(&chunk["logprobs"])
                .iter()
                .all(|(_, p)| *p == round(CONFIDENT))
        );
        assert_eq!(
            keys(chunk),
            ["model", "created_at", "message", "done", "logprobs"]
        );
        let first = &chunk["logprobs"][0];
        assert_eq!(keys(first), ["token", "logprob", "bytes"]);
        let bytes: Vec<u8> = serde_json::from_value(first["bytes"].clone()).unwrap();
        assert_eq!(bytes, first["token"].as_str().unwrap().as_bytes());
    }
    assert_eq!(done["done"], true);
    assert!(done.get("logprobs").is_none(), "{done}");
}

#[tokio::test]
async fn whole_answers_concatenate_the_streamed_tokens() {
    let fake = FakeOllama::builder().start().await;
    let streamed = post(
        &fake,
        "/api/chat",
        ask("qwen3", "why?", json!({"logprobs": true})),
    )
    .await;
    let streamed: Vec<Value> = streamed
        .lines()
        .iter()
        .filter_map(|l| l.get("logprobs"))
        .flat_map(|l| l.as_array().unwrap().clone())
        .collect();
    let r = post(
        &fake,
        "/api/chat",
        ask("qwen3", "why?", json!({"logprobs": true, "stream": false})),
    )
    .await;
    let whole = r.json();
    let m = &whole["message"];
    let text = format!(
        "{}{}",
        m["thinking"].as_str().unwrap(),
        m["content"].as_str().unwrap()
    );
    assert_eq!(spelled(&whole["logprobs"]), text);
    assert_eq!(whole["logprobs"], Value::Array(streamed));
    let k = keys(&whole);
    let at = k.iter().position(|k| *k == "logprobs").unwrap();
    assert_eq!(
        k[at - 1..at + 2],
        ["done_reason", "logprobs", "total_duration"]
    );
}

#[tokio::test]
async fn generate_whole_and_streamed() {
    let fake = FakeOllama::builder().start().await;
    let body = json!({"model": "llama3.2", "prompt": "why?", "logprobs": true});
    let lines = post(&fake, "/api/generate", body.clone()).await.lines();
    let (done, chunks) = lines.split_last().unwrap();
    for chunk in chunks {
        assert_eq!(
            spelled(&chunk["logprobs"]),
            chunk["response"].as_str().unwrap()
        );
        assert_eq!(keys(chunk).last(), Some(&"logprobs"));
    }
    assert!(done.get("logprobs").is_none());
    let mut body = body;
    body["stream"] = json!(false);
    let whole = post(&fake, "/api/generate", body).await.json();
    assert_eq!(spelled(&whole["logprobs"]), fake_ollama::SENTENCE.concat());
    assert_eq!(keys(&whole).last(), Some(&"logprobs"));
    // Each chunk is tokenized on its own ("Ray" + "leigh" → "Ray", "leig", "h").
    let per_chunk: usize = fake_ollama::SENTENCE.iter().map(|s| tokens(s).len()).sum();
    assert_eq!(whole["logprobs"].as_array().unwrap().len(), per_chunk);
}

#[tokio::test]
async fn unsure_spans_lower_their_tokens() {
    let fake = FakeOllama::builder()
        .script("capital", vec!["The capital is Paris, not Lyon.".into(); 3])
        .unsure("capital", &[("Paris", 0.3), ("Lyon", 0.6)])
        .start()
        .await;
    let body = ask("capital", "?", json!({"logprobs": true, "stream": false}));
    // Scripted replies stream in 3-character pieces ("Par", "is,", …, "t L", "yon"), each
    // tokenized on its own: a span marks every token it overlaps, across chunks.
    let want = [
        ("Par".to_owned(), 0.3),
        ("is".to_owned(), 0.3),
        ("L".to_owned(), 0.6),
        ("yon".to_owned(), 0.6),
    ];
    let whole = post(&fake, "/api/chat", body.clone()).await.json();
    let low: Vec<(String, f64)> = pairs(&whole["logprobs"])
        .into_iter()
        .filter(|(_, p)| *p != round(CONFIDENT))
        .collect();
    assert_eq!(low, want);
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let lines = post(&fake, "/api/chat", streamed).await.lines();
    let low: Vec<(String, f64)> = lines
        .iter()
        .filter_map(|l| l.get("logprobs"))
        .flat_map(pairs)
        .filter(|(_, p)| *p != round(CONFIDENT))
        .collect();
    assert_eq!(low, want);
    // A queued override replaces the model's spans for one request.
    fake.push_unsure("capital", &[("capital", 0.1)]);
    fake.push_script("capital", vec!["The capital is Paris.".into()]);
    let once = post(&fake, "/api/chat", body.clone()).await.json();
    let low: Vec<(String, f64)> = pairs(&once["logprobs"])
        .into_iter()
        .filter(|(_, p)| *p != round(CONFIDENT))
        .collect();
    let want = [
        ("ca".to_owned(), 0.1),
        ("pit".to_owned(), 0.1),
        ("al".to_owned(), 0.1),
    ];
    assert_eq!(low, want);
    let after = post(&fake, "/api/chat", body).await.json();
    assert!(
        pairs(&after["logprobs"]).contains(&("Par".to_owned(), 0.3)),
        "{after}"
    );
}

#[tokio::test]
async fn top_logprobs_list_the_token_then_alternatives() {
    let fake = FakeOllama::builder()
        .script("capital", vec!["Paris".into()])
        .unsure("capital", &[("Paris", 0.3)])
        .start()
        .await;
    let body = ask(
        "capital",
        "?",
        json!({"logprobs": true, "top_logprobs": 3, "stream": false}),
    );
    let whole = post(&fake, "/api/chat", body).await.json();
    for entry in whole["logprobs"].as_array().unwrap() {
        let top = &entry["top_logprobs"];
        let names: Vec<&str> = top
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["token"].as_str().unwrap())
            .collect();
        assert_eq!(names, [entry["token"].as_str().unwrap(), "alt1", "alt2"]);
        assert_eq!(top[0]["logprob"], entry["logprob"]);
        let lp: Vec<f64> = pairs(top).iter().map(|(_, p)| *p).collect();
        assert!(lp.windows(2).all(|w| w[0] > w[1]), "{lp:?}");
        assert!(lp.iter().sum::<f64>() <= 1.0, "{lp:?}");
        assert_eq!(top[1]["bytes"], json!(b"alt1"));
    }
    // `top_logprobs` 0: no alternatives at all.
    let r = post(
        &fake,
        "/api/generate",
        json!({"model": "llama3.2", "prompt": "x", "logprobs": true, "stream": false}),
    )
    .await;
    assert!(r.json()["logprobs"][0].get("top_logprobs").is_none());
}

#[tokio::test]
async fn absent_unless_asked_and_range_checked() {
    let fake = FakeOllama::builder().start().await;
    for extra in [json!({}), json!({"logprobs": false, "top_logprobs": 3})] {
        for path in ["/api/chat", "/api/generate"] {
            let mut body = ask("qwen3", "why?", extra.clone());
            body["prompt"] = json!("why?");
            for stream in [true, false] {
                body["stream"] = json!(stream);
                let r = post(&fake, path, body.clone()).await;
                assert_eq!(r.status, 200);
                assert!(!r.text().contains("logprob"), "{path}: {}", r.text());
            }
        }
    }
    for path in ["/api/chat", "/api/generate"] {
        for top in [21, -1] {
            let mut body = ask(
                "qwen3",
                "why?",
                json!({"logprobs": true, "top_logprobs": top}),
            );
            body["prompt"] = json!("why?");
            let r = post(&fake, path, body).await;
            assert_eq!(
                (r.status, r.header("content-type"), r.text().as_str()),
                (
                    400,
                    Some("application/json; charset=utf-8"),
                    r#"{"error":"top_logprobs must be between 0 and 20"}"#
                )
            );
        }
    }
    let r = post(
        &fake,
        "/v1/chat/completions",
        ask(
            "qwen3",
            "why?",
            json!({"logprobs": true, "top_logprobs": 25}),
        ),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "top_logprobs must be between 0 and 20"
    );
}

#[tokio::test]
async fn native_tool_calls_carry_the_calls_text() {
    let call = json!({"name": "get_weather", "arguments": {"city": "Paris"}});
    let fake = FakeOllama::builder()
        .script_tool_calls("caller", vec![json!([call]), json!([call])])
        .unsure("caller", &[("Paris", 0.4)])
        .start()
        .await;
    let body = ask(
        "caller",
        "weather?",
        json!({"tools": weather_tool(), "logprobs": true}),
    );
    let lines = post(&fake, "/api/chat", body.clone()).await.lines();
    assert_eq!(lines.len(), 2);
    assert!(lines[0]["message"]["tool_calls"].is_array());
    assert_eq!(spelled(&lines[0]["logprobs"]), call.to_string());
    assert!(pairs(&lines[0]["logprobs"]).contains(&("Pari".to_owned(), 0.4)));
    let mut body = body;
    body["stream"] = json!(false);
    let whole = post(&fake, "/api/chat", body).await.json();
    assert_eq!(spelled(&whole["logprobs"]), call.to_string());
}

#[tokio::test]
async fn openai_chat_whole_and_streamed() {
    let fake = FakeOllama::builder().start().await;
    let body = ask(
        "llama3.2",
        "why?",
        json!({"logprobs": true, "top_logprobs": 2}),
    );
    let whole = post(&fake, "/v1/chat/completions", body.clone())
        .await
        .json();
    let choice = &whole["choices"][0];
    assert_eq!(
        keys(choice),
        ["index", "message", "finish_reason", "logprobs"]
    );
    let content = &choice["logprobs"]["content"];
    assert_eq!(spelled(content), fake_ollama::SENTENCE.concat());
    assert_eq!(content[0]["top_logprobs"].as_array().unwrap().len(), 2);
    let mut body = body;
    body["stream"] = json!(true);
    let r = post(&fake, "/v1/chat/completions", body).await;
    let chunks: Vec<Value> = r
        .text()
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let (last, pieces) = chunks.split_last().unwrap();
    for c in pieces {
        let choice = &c["choices"][0];
        assert_eq!(
            spelled(&choice["logprobs"]["content"]),
            choice["delta"]["content"].as_str().unwrap()
        );
    }
    assert!(last["choices"][0].get("logprobs").is_none());
    let plain = post(
        &fake,
        "/v1/chat/completions",
        ask("llama3.2", "why?", json!({})),
    )
    .await;
    assert!(!plain.text().contains("logprobs"));
}
