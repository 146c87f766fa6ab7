//! Wire tests of `POST /v1/responses` (OpenAI's Responses API as Ollama serves it).

mod common;

use fake_ollama::{FakeOllama, SENTENCE};
use serde_json::{Value, json};

use common::{
    assert_failed_before_stream, assert_stream_headers, assert_unknown_model, encoded, keys, names,
    post, sse,
};

const PATH: &str = "/v1/responses";

fn weather() -> Value {
    json!([{ "type": "function", "name": "get_weather", "parameters": {
        "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } }])
}

/// Every payload is a Go map: keys sorted, at every level but inside raw schemas.
fn assert_sorted(v: &Value) {
    if let Value::Object(m) = v {
        let k: Vec<&String> = m.keys().collect();
        let mut sorted = k.clone();
        sorted.sort();
        assert_eq!(k, sorted);
        m.values().for_each(assert_sorted);
    } else if let Value::Array(a) = v {
        a.iter().for_each(assert_sorted);
    }
}

#[tokio::test]
async fn plain_answer() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        PATH,
        json!({"model": "llama3.2", "input": "hi", "instructions": "be brief"}),
    )
    .await;
    let v = encoded(&r, 200);
    assert_eq!(
        keys(&v),
        [
            "id",
            "object",
            "created_at",
            "completed_at",
            "status",
            "incomplete_details",
            "model",
            "previous_response_id",
            "instructions",
            "output",
            "error",
            "tools",
            "tool_choice",
            "truncation",
            "parallel_tool_calls",
            "text",
            "top_p",
            "presence_penalty",
            "frequency_penalty",
            "top_logprobs",
            "temperature",
            "reasoning",
            "usage",
            "max_output_tokens",
            "max_tool_calls",
            "store",
            "background",
            "service_tier",
            "metadata",
            "safety_identifier",
            "prompt_cache_key"
        ]
    );
    assert!(v["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(
        (v["object"].clone(), v["status"].clone()),
        (json!("response"), json!("completed"))
    );
    assert_eq!(
        (v["model"].clone(), v["instructions"].clone()),
        (json!("llama3.2"), json!("be brief"))
    );
    assert!(v["completed_at"].as_i64().unwrap() >= v["created_at"].as_i64().unwrap());
    let out = &v["output"];
    assert_eq!(out.as_array().unwrap().len(), 1);
    assert!(out[0]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        out[0]["content"],
        json!([{ "type": "output_text", "text": SENTENCE.concat(), "annotations": [], "logprobs": [] }])
    );
    let r = r.text();
    assert!(r.contains(r#""tools":[],"tool_choice":"auto","truncation":"disabled","parallel_tool_calls":true,"text":{"format":{"type":"text"}},"top_p":1,"presence_penalty":0"#));
    assert_eq!(
        v["usage"],
        json!({ "input_tokens": 13, "output_tokens": 11, "total_tokens": 24,
            "input_tokens_details": { "cached_tokens": 0 }, "output_tokens_details": { "reasoning_tokens": 0 } })
    );
    assert_eq!(fake.last_json(PATH).unwrap()["instructions"], "be brief");
    // A json_schema text format is the chat's format, echoed back as sent.
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "a": {"type": "string"}}, "required": ["n", "a"]});
    let format = json!({"type": "json_schema", "name": "thing", "schema": schema, "strict": true});
    let v = post(
        &fake,
        PATH,
        json!({"model": "llama3.2", "input": "x", "text": {"format": format}}),
    )
    .await
    .json();
    assert_eq!(v["output"][0]["content"][0]["text"], r#"{"n":1,"a":"x"}"#);
    assert_eq!(v["text"]["format"], format);
    assert_eq!(
        keys(&v["text"]["format"]["schema"]["properties"]),
        ["n", "a"]
    );
}

#[tokio::test]
async fn tool_call_whole_and_streamed() {
    let fake = FakeOllama::builder().start().await;
    let body = json!({"model": "llama3.2", "input": "weather?", "tools": weather()});
    let v = post(&fake, PATH, body.clone()).await.json();
    let id = v["id"].as_str().unwrap();
    let out = v["output"].as_array().unwrap();
    assert_eq!(out.len(), 1, "a call answer has no message item");
    let call = &out[0];
    assert_eq!(
        keys(call),
        ["id", "type", "status", "call_id", "name", "arguments"]
    );
    assert_eq!(call["id"], format!("fc_{id}_0"));
    assert_eq!(
        (call["type"].as_str(), call["name"].as_str()),
        (Some("function_call"), Some("get_weather"))
    );
    assert_eq!(call["arguments"], r#"{"city":"x"}"#);
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    // Declared tools come back as Go marshals them: parameters with sorted keys.
    assert_eq!(
        v["tools"],
        json!([{ "type": "function", "name": "get_weather", "description": null, "strict": null,
            "parameters": { "properties": { "city": { "type": "string" } }, "required": ["city"], "type": "object" } }])
    );
    assert_eq!(
        keys(&v["tools"][0]["parameters"]),
        ["properties", "required", "type"]
    );

    let mut body = body;
    body["stream"] = json!(true);
    let events = sse(&post(&fake, PATH, body).await);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let added = &events[2].1["item"];
    assert_eq!(
        (added["status"].as_str(), added["arguments"].as_str()),
        (Some("in_progress"), Some(""))
    );
    assert_eq!(events[3].1["delta"], r#"{"city":"x"}"#);
    let done = &events[6].1["response"];
    assert_eq!(done["output"][0]["status"], "completed");
    assert_eq!(done["output"][0]["call_id"], added["call_id"]);
}

#[tokio::test]
async fn tools_refusal_and_errors() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        PATH,
        json!({"model": "gemma3", "input": "x", "tools": weather()}),
    )
    .await;
    encoded(&r, 400);
    assert_eq!(
        r.text(),
        "{\"error\":{\"message\":\"registry.ollama.ai/library/gemma3:latest does not support tools\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}\n"
    );
    assert_unknown_model(&post(&fake, PATH, json!({"model": "nope", "input": "x"})).await);
    let r = post(&fake, PATH, json!({"input": "x"})).await;
    assert_eq!(
        (r.status, r.json()["error"]["message"].as_str()),
        (400, Some("model is required"))
    );
    let r = post(
        &fake,
        PATH,
        json!({"model": "gemma3", "input": "x", "reasoning": {"effort": "high"}}),
    )
    .await;
    assert_eq!(
        r.json()["error"]["message"],
        r#""gemma3" does not support thinking"#
    );
    // The middleware's own errors are written by gin: charset, no trailing newline.
    let r = post(&fake, PATH, json!({"model": "llama3.2", "input": 5})).await;
    assert_eq!(
        (r.status, r.header("content-type")),
        (400, Some("application/json; charset=utf-8"))
    );
    assert!(r.text().ends_with("}}"));
    assert_eq!(
        r.json()["error"]["message"],
        "input must be a string or array: json: cannot unmarshal number into Go value of type []json.RawMessage"
    );
    let r = post(
        &fake,
        PATH,
        json!({"model": "llama3.2", "input": [{"type": "nope"}]}),
    )
    .await;
    assert_eq!(
        r.json()["error"]["message"],
        r#"input[0]: unknown input item type: "nope""#
    );
    let r = post(
        &fake,
        PATH,
        json!({"model": "llama3.2", "input": "x", "reasoning": {"effort": "huge"}}),
    )
    .await;
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(r#"invalid reasoning value: "huge" (must be "minimal", "#)
    );
    // A runner failure before the first event: the error object, with the stream's headers.
    let r = post(
        &fake,
        PATH,
        json!({"model": "error-500", "input": "x", "stream": true}),
    )
    .await;
    assert_failed_before_stream(&r);
}

#[tokio::test]
async fn streamed_answer_events() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        PATH,
        json!({"model": "llama3.2", "input": "hi", "stream": true}),
    )
    .await;
    assert_stream_headers(&r);
    assert!(
        r.text()
            .starts_with("event: response.created\ndata: {\"response\":{\"background\":false,")
    );
    let events = sse(&r);
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    expected.extend(std::iter::repeat_n(
        "response.output_text.delta",
        SENTENCE.len(),
    ));
    expected.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(names(&events), expected);
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(
            (data["type"].as_str(), data["sequence_number"].as_u64()),
            (Some(name.as_str()), Some(i as u64))
        );
        assert_sorted(data);
    }
    let deltas: String = events
        .iter()
        .filter_map(|(_, d)| d.get("delta")?.as_str())
        .collect();
    assert_eq!(deltas, SENTENCE.concat());
    let created = &events[0].1["response"];
    assert_eq!(
        (
            created["status"].as_str(),
            created["output"].clone(),
            created["usage"].clone()
        ),
        (Some("in_progress"), json!([]), Value::Null)
    );
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], SENTENCE.concat());
    assert_eq!(done["usage"]["output_tokens"], 11);
    assert!(done["completed_at"].is_i64());
    assert_eq!(fake.streams_completed(), 1);
    // A cut stream ends without response.completed.
    let r = post(
        &fake,
        PATH,
        json!({"model": "stream-cut", "input": "x", "stream": true}),
    )
    .await;
    assert!(!r.complete);
    assert!(
        r.text().contains("response.output_text.delta") && !r.text().contains("response.completed")
    );
}

#[tokio::test]
async fn thinking_and_length() {
    let fake = FakeOllama::builder().start().await;
    let v = post(&fake, PATH, json!({"model": "qwen3", "input": "why?"}))
        .await
        .json();
    let thought = "Okay, the user asks a question.";
    let id = v["id"].as_str().unwrap();
    assert_eq!(
        v["output"][0],
        json!({ "id": format!("rs_{id}"), "type": "reasoning",
            "summary": [{ "type": "summary_text", "text": thought }], "encrypted_content": thought })
    );
    assert_eq!(v["output"][1]["type"], "message");
    let v = post(
        &fake,
        PATH,
        json!({"model": "qwen3", "input": "why?", "reasoning": {"effort": "none"}}),
    )
    .await
    .json();
    assert_eq!(v["output"].as_array().unwrap().len(), 1);
    assert_eq!(v["reasoning"], json!({ "effort": "none" }));
    let r = post(
        &fake,
        PATH,
        json!({"model": "qwen3", "input": "why?", "stream": true}),
    )
    .await;
    let events = sse(&r);
    assert_eq!(
        names(&events)[2..4],
        [
            "response.output_item.added",
            "response.reasoning_summary_text.delta"
        ]
    );
    assert_eq!(
        events[2].1["item"],
        json!({ "id": events[3].1["item_id"], "summary": [], "type": "reasoning" })
    );
    let done = events
        .iter()
        .find(|(n, _)| n == "response.reasoning_summary_text.done")
        .unwrap();
    assert_eq!(done.1["text"], thought);
    let completed = &events.last().unwrap().1["response"]["output"];
    assert_eq!(
        (completed[0]["type"].as_str(), completed[1]["type"].as_str()),
        (Some("reasoning"), Some("message"))
    );
    assert_eq!(
        completed[1]["id"],
        events
            .iter()
            .find(|(n, _)| n == "response.output_text.delta")
            .unwrap()
            .1["item_id"]
    );
    // max_output_tokens is num_predict: the answer stops early, and Ollama still says completed.
    let v = post(
        &fake,
        PATH,
        json!({"model": "llama3.2", "input": "x", "max_output_tokens": 3}),
    )
    .await
    .json();
    assert_eq!(v["output"][0]["content"][0]["text"], "The sky is");
    assert_eq!(
        (v["status"].as_str(), v["incomplete_details"].clone()),
        (Some("completed"), Value::Null)
    );
    assert_eq!(v["max_output_tokens"], 3);
}

#[tokio::test]
async fn history_and_content_models() {
    let fake = FakeOllama::builder().start().await;
    let input = json!([
        { "role": "user", "content": "weather in Paris?" },
        { "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" },
        { "type": "function_call_output", "call_id": "call_1", "output": "sunny" },
        { "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "and tomorrow?" }] }
    ]);
    let v = post(&fake, PATH, json!({"model": "tool-json", "input": input}))
        .await
        .json();
    assert_eq!(v["output"][0]["content"][0]["text"], "and tomorrow?");
    let body = json!({"model": "echo", "input": "x", "temperature": 0.5});
    let v = post(&fake, PATH, body.clone()).await.json();
    let echoed: Value =
        serde_json::from_str(v["output"][0]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, body);
    assert_eq!(v["temperature"], 0.5);
    assert_eq!(fake.last_json(PATH).unwrap(), body);
    assert_eq!(fake.requests(PATH), 2);
}
