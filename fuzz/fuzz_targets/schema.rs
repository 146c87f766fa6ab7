//! Schema surgery: any JSON a client sends as a schema is measured, made
//! grammar-safe, compiled and used for validation without panicking, and
//! every step of a schema within the budget does bounded work (libFuzzer's
//! `-timeout` turns a slow input into a failure).
#![no_main]

use augur::inputs::{self as schema, budget};
use augur::inputs as validate;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if budget::check(&schema, &budget::Limits::default()).is_err() {
        return;
    }
    let _ = schema::sanitize(&schema);
    let _ = schema::degrade(&schema);
    let Ok(compiled) = validate::compile(&schema) else {
        return;
    };
    for instance in [
        Value::Null,
        json!({}),
        json!([1, "a", {"b": [true, null]}]),
        json!("text"),
        json!(-1.5),
        schema.clone(),
    ] {
        let checked = compiled.check(&instance);
        assert!(checked.violations.len() <= validate::MAX_VIOLATIONS);
        let _ = validate::coerce_to_schema(&mut instance.clone(), &schema);
    }
});
