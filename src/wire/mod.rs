//! Wire helpers shared by every route: JSON written the way Ollama's Go
//! server writes it, and Go-style timestamps.

pub mod gojson;

pub use gojson::{created_at_now, to_go_json};
