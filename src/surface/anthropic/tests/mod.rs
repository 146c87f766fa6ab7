//! Translation and rendering, against the shapes of Ollama's
//! `anthropic/anthropic_test.go` and `middleware/anthropic_test.go`.

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{error::ProxyError, pipeline::output::Output};

use super::{
    answer::{Meta, stop_reason},
    render,
    request::{Translated, translate},
    response::message,
    stream::{Converter, Event},
};

const IMAGE: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNk+A8AAQUBAScY42YAAAAASUVORK5CYII=";

fn tr(v: Value) -> Translated {
    translate(v.as_object().unwrap()).unwrap()
}

fn tr_err(v: Value) -> String {
    match translate(v.as_object().unwrap()) {
        Err(ProxyError::BadRequest(m)) => m,
        Err(other) => panic!("not a 400: {other:?}"),
        Ok(_) => panic!("translated"),
    }
}

fn body(t: &Translated) -> Value {
    Value::Object(t.body.clone())
}

fn req(messages: Value) -> Value {
    json!({"model": "m", "max_tokens": 1024, "messages": messages})
}

fn meta() -> Meta {
    Meta {
        id: "msg_123".into(),
        model: "test-model".into(),
        estimated_input_tokens: 0,
        show_thinking: true,
    }
}

fn chunk(message: Value) -> Value {
    json!({"model": "test-model", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false})
}

fn done(reason: &str, prompt: u64, eval: u64) -> Value {
    json!({"model": "test-model", "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": reason, "prompt_eval_count": prompt, "eval_count": eval})
}

mod answers;
mod refusals;
mod rendering;
mod requests;
mod route;
mod streams;
