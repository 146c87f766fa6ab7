//! Wire helpers shared by every route: JSON written the way Ollama's Go
//! server writes it, Go-style timestamps, request paths as Go's router
//! reads them, and model names as Ollama resolves them.

pub mod gojson;
pub mod model_name;
pub mod path;

pub use gojson::{created_at_now, to_go_json};
pub use model_name::normalize_model_name;
