//! Micro-benchmark of augur's body-aware stages, model time excluded.
//!
//! Run: `cargo run --release --example emulation` (prints a table).
//!
//! - tool emulation with 20 tools: request rewrite (tool set, envelope
//!   schema, instruction, history) plus answer synthesis (parse,
//!   validate, `tool_calls`), per request, for a tool set augur has seen
//!   before (clients resend their tools every turn); the per-step table
//!   shows what a first sight costs;
//! - streamed emulation: time from an upstream token arriving to its
//!   answer text being ready for the client;
//! - validating a 10 KB answer against a cached schema;
//! - reading a long plain chat request (no format, tools or think): the
//!   skim that lets it pass unparsed, beside a full JSON parse.

// A benchmark program: it prints its table and may stop on a broken setup.
#![allow(clippy::print_stdout, clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use augur::inputs::{self as tools, Validators};
use serde_json::{Value, json};

fn tool(i: usize) -> Value {
    json!({"type": "function", "function": {
        "name": format!("tool_{i}"),
        "description": format!("Tool number {i}: looks something up"),
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "maxLength": 200},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "mode": {"type": "string", "enum": ["fast", "exact", "fuzzy"]},
            "tags": {"type": ["array", "null"], "items": {"type": "str"}}
        }, "required": ["query"]}
    }})
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (at(0.5), at(0.99), at(0.999))
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let declared: Vec<Value> = (0..20).map(tool).collect();
    let messages = vec![
        json!({"role": "system", "content": "You are a helpful assistant."}),
        json!({"role": "user", "content": "Find fuzzy matches for 'rust proxy', at most 5."}),
        json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "tool_3", "arguments": "{\"query\":\"x\"}"}}]}),
        json!({"role": "tool", "tool_name": "tool_3", "content": "{\"hits\": 0}"}),
        json!({"role": "user", "content": "Try again."}),
    ];
    let answer = r#"{"tool_calls":[{"name":"tool_7","arguments":{"query":"rust proxy","limit":"5","mode":"fuzzy"}}]}"#;
    let n = 20_000;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let set = tools::ToolSet::from_request_cached(&declared, augur::inputs::FormatForms::Exact)
            .expect("tools");
        let choice = tools::ToolChoice::from_request(None, &set).expect("choice");
        let format = tools::build_format(&set, &choice, true, None);
        let instruction = tools::instruction(&set, &choice, true, "What is the weather in Paris?");
        let rewritten = tools::rewrite_messages(&messages, &instruction, true);
        let mut calls = match tools::parse_output(answer, &set) {
            Ok(tools::ModelOutput::Calls(calls)) => calls,
            _ => panic!("expected calls"),
        };
        let _ = tools::repair_calls(&mut calls, &set);
        let violations = tools::validate_calls(&calls, &set);
        let synthesized = tools::ollama_tool_calls(&calls, 0);
        std::hint::black_box((format, rewritten, violations, synthesized));
        samples.push(t.elapsed());
    }
    let (p50, p99, p999) = percentiles(samples);

    // Where the time goes, per step (p50 over 2,000 requests).
    let mut steps: Vec<(&str, Vec<Duration>)> = [
        "tool set, first sight (sanitize)",
        "envelope schema",
        "instruction",
        "history rewrite",
        "parse + repair + validate + synthesize",
    ]
    .iter()
    .map(|name| (*name, Vec::new()))
    .collect();
    for _ in 0..2_000 {
        let t = Instant::now();
        let set = tools::ToolSet::from_request(&declared).expect("tools");
        let choice = tools::ToolChoice::from_request(None, &set).expect("choice");
        steps[0].1.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(tools::build_format(&set, &choice, true, None));
        steps[1].1.push(t.elapsed());
        let t = Instant::now();
        let instruction = tools::instruction(&set, &choice, true, "What is the weather in Paris?");
        steps[2].1.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(tools::rewrite_messages(&messages, &instruction, true));
        steps[3].1.push(t.elapsed());
        let t = Instant::now();
        if let Ok(tools::ModelOutput::Calls(mut calls)) = tools::parse_output(answer, &set) {
            let _ = tools::repair_calls(&mut calls, &set);
            std::hint::black_box(tools::validate_calls(&calls, &set));
            std::hint::black_box(tools::ollama_tool_calls(&calls, 0));
        }
        steps[4].1.push(t.elapsed());
    }

    // Streamed answer: per-token extraction time.
    let set = tools::ToolSet::from_request(&declared).expect("tools");
    let text = format!(
        "{{\"response\":\"{}\"}}",
        "The quick brown fox jumps over the lazy dog. ".repeat(40)
    );
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let mut token_samples = Vec::new();
    for _ in 0..50 {
        let mut x = tools::StreamExtractor::new(&set, false);
        for piece in &pieces {
            let t = Instant::now();
            std::hint::black_box(x.feed(piece));
            token_samples.push(t.elapsed());
        }
    }
    let (t50, t99, t999) = percentiles(token_samples);

    // Validating a 10 KB answer against a cached schema.
    let validators = Validators::new(16 << 20);
    let schema = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"}, "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}}
        }, "required": ["id", "name"]}}
    }, "required": ["items"]});
    let items: Vec<Value> = (0..145)
        .map(|i| json!({"id": i, "name": format!("item number {i}"), "score": i as f64 / 3.0, "tags": ["a", "b"]}))
        .collect();
    let doc = json!({"items": items});
    let size = doc.to_string().len();
    let mut v_samples = Vec::new();
    for _ in 0..20_000 {
        let t = Instant::now();
        std::hint::black_box(validators.validate(&schema, &doc));
        v_samples.push(t.elapsed());
    }
    let (v50, v99, v999) = percentiles(v_samples);

    // A plain chat request with a long history: skim vs full parse.
    let history: Vec<Value> = (0..40)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
            "content": format!("Turn {i}: {}", "Some words about Rust and proxies, with \"quotes\". ".repeat(10))}))
        .collect();
    let request = serde_json::to_vec(
        &json!({"model": "gemma3", "messages": history, "options": {"temperature": 0.2}}),
    )
    .unwrap();
    let time = |f: &dyn Fn()| {
        let samples: Vec<Duration> = (0..5_000)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        percentiles(samples)
    };
    let skimmed = time(&|| {
        let _ = std::hint::black_box(augur::inputs::read_names(&request, &["model"]));
    });
    let parsed = time(&|| {
        std::hint::black_box(serde_json::from_slice::<Value>(&request).unwrap());
    });

    println!("| Measure | p50 | p99 | p99.9 | target |");
    println!("|---|---:|---:|---:|---|");
    println!(
        "| tool emulation, 20 tools: rewrite + answer synthesis per request | {} | {} | {} | p99 ≤ 1,000 µs |",
        us(p50),
        us(p99),
        us(p999)
    );
    println!(
        "| streamed emulation: upstream token → answer text ready | {} | {} | {} | ≤ 5,000 µs |",
        us(t50),
        us(t99),
        us(t999)
    );
    println!(
        "| validate a {:.1} KB answer against a cached schema | {} | {} | {} | p99 ≤ 100 µs |",
        size as f64 / 1024.0,
        us(v50),
        us(v99),
        us(v999)
    );
    let kb = request.len() as f64 / 1024.0;
    for (what, (a, b, c)) in [
        ("skim (forwarded unparsed)", skimmed),
        ("full JSON parse", parsed),
    ] {
        println!(
            "| plain {kb:.1} KB chat request: {what} | {} | {} | {} |  |",
            us(a),
            us(b),
            us(c)
        );
    }
    println!("\nTool emulation per step (p50):\n");
    println!("| Step | p50 |");
    println!("|---|---:|");
    for (name, samples) in steps {
        let (p50, _, _) = percentiles(samples);
        println!("| {name} | {} |", us(p50));
    }
    println!(
        "\nschemas compiled: {} (one distinct schema)",
        validators.compilations()
    );
}
