//! The ways of asking augur that each cancel differently: passthrough,
//! validated streams (pass, buffered), whole answers, emulated tools, on
//! the native and the OpenAI routes.

use serde_json::{Value, json};

use super::{person, weather_tool};

/// A long user message: the `dribble` model answers it 2 characters per
/// 20 ms chunk, so generating all of it takes seconds.
pub(crate) fn long(prefix: &str, suffix: &str) -> String {
    format!("{prefix}{}{suffix}", "x".repeat(400))
}

/// A schema-invalid answer (no `age`): a retry would follow it.
pub(crate) fn invalid_person() -> String {
    long(r#"{"name":""#, r#""}"#)
}

/// A tool call missing its required argument: a retry would follow it.
pub(crate) fn invalid_call() -> String {
    long(
        r#"{"tool_call":{"name":"get_weather","arguments":{"town":""#,
        r#""}}}"#,
    )
}

/// One way of asking: route, body, and whether the answer streams.
pub(crate) struct Mode {
    pub name: &'static str,
    pub path: &'static str,
    pub body: Value,
}

pub(crate) fn chat(stream: bool, content: String, extra: Value) -> Value {
    let mut body = json!({"model": "dribble", "stream": stream,
        "messages": [{"role": "user", "content": content}]});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body
}

pub(crate) fn modes() -> Vec<Mode> {
    let tools = json!({"tools": [weather_tool()]});
    vec![
        Mode {
            name: "plain stream",
            path: "/api/chat",
            body: chat(true, long("", ""), json!({})),
        },
        Mode {
            name: "plain whole",
            path: "/api/chat",
            body: chat(false, long("", ""), json!({})),
        },
        Mode {
            name: "json stream",
            path: "/api/chat",
            body: chat(true, long("{\"a\":\"", "\"}"), json!({"format": "json"})),
        },
        Mode {
            name: "json whole",
            path: "/api/generate",
            body: json!({"model": "dribble", "stream": false, "format": "json",
                "prompt": long("{\"a\":", "")}),
        },
        Mode {
            name: "schema buffered",
            path: "/api/chat",
            body: chat(true, invalid_person(), json!({"format": person()})),
        },
        Mode {
            name: "schema whole",
            path: "/api/chat",
            body: chat(false, invalid_person(), json!({"format": person()})),
        },
        Mode {
            name: "tools stream",
            path: "/api/chat",
            body: chat(true, invalid_call(), tools.clone()),
        },
        Mode {
            name: "tools whole",
            path: "/api/chat",
            body: chat(false, invalid_call(), tools.clone()),
        },
        Mode {
            name: "openai tools stream",
            path: "/v1/chat/completions",
            body: chat(true, invalid_call(), tools.clone()),
        },
        Mode {
            name: "openai tools whole",
            path: "/v1/chat/completions",
            body: chat(false, invalid_call(), tools),
        },
        Mode {
            name: "generate schema whole",
            path: "/api/generate",
            body: json!({"model": "dribble", "stream": false, "format": person(),
                "prompt": invalid_person()}),
        },
        Mode {
            name: "generate schema buffered",
            path: "/api/generate",
            body: json!({"model": "dribble", "stream": true, "format": person(),
                "prompt": invalid_person()}),
        },
        Mode {
            name: "openai schema whole",
            path: "/v1/chat/completions",
            body: chat(
                false,
                invalid_person(),
                json!({"response_format": {
                "type": "json_schema", "json_schema": {"name": "person", "schema": person()}}}),
            ),
        },
        Mode {
            name: "responses schema whole",
            path: "/v1/responses",
            body: json!({"model": "dribble", "stream": false, "input": invalid_person(),
                "text": {"format": {"type": "json_schema", "name": "person", "schema": person()}}}),
        },
        Mode {
            name: "responses schema stream",
            path: "/v1/responses",
            body: json!({"model": "dribble", "stream": true, "input": invalid_person(),
                "text": {"format": {"type": "json_schema", "name": "person", "schema": person()}}}),
        },
        Mode {
            name: "openai schema stream",
            path: "/v1/chat/completions",
            body: chat(
                true,
                invalid_person(),
                json!({"response_format": {
                "type": "json_schema", "json_schema": {"name": "person", "schema": person()}}}),
            ),
        },
    ]
}

/// Modes that need a policy: a schema answer validated as it streams.
pub(crate) fn pass_modes() -> Vec<Mode> {
    vec![Mode {
        name: "schema pass",
        path: "/api/chat",
        body: chat(true, invalid_person(), json!({"format": person()})),
    }]
}

/// Modes whose first answer is invalid at once, so that the client leaves
/// while augur asks again.
pub(crate) fn retry_modes() -> Vec<Mode> {
    let short_person = r#"{"name":"x"}"#.to_string();
    let short_call = r#"{"tool_call":{"name":"get_weather","arguments":{}}}"#.to_string();
    let tools = json!({"tools": [weather_tool()]});
    vec![
        Mode {
            name: "schema whole retry",
            path: "/api/chat",
            body: chat(false, short_person.clone(), json!({"format": person()})),
        },
        Mode {
            name: "schema buffered retry",
            path: "/api/chat",
            body: chat(true, short_person, json!({"format": person()})),
        },
        Mode {
            name: "tools stream retry",
            path: "/api/chat",
            body: chat(true, short_call.clone(), tools.clone()),
        },
        Mode {
            name: "openai tools retry",
            path: "/v1/chat/completions",
            body: chat(false, short_call, tools),
        },
    ]
}
