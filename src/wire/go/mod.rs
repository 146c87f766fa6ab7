//! What Go's standard library does where a client could see the
//! difference: JSON text as `encoding/json` writes it ([`json`]),
//! timestamps as `time.Time` writes and reads them ([`timestamp`]), `%q`
//! strings ([`text`]), and base64 checked as `encoding/base64` reads it
//! ([`base64`]).

pub(crate) mod base64;
pub(crate) mod json;
pub(crate) mod text;
pub(crate) mod timestamp;

pub(crate) use base64::base64_std;
pub(crate) use json::{
    float, json_kind, marshal, marshal_sorted, ndjson_line, sorted, sorted_deep, to_go_json,
};
pub(crate) use text::quote;
pub(crate) use timestamp::{created_at_now, unix_seconds};
