//! Wire helpers shared by every route: JSON written the way Ollama's Go
//! server writes it, Go-style timestamps, request paths as Go's router
//! reads them, model names as Ollama resolves them, and the size of a
//! JSON value.

pub mod content;
pub mod gojson;
pub mod json_scan;
pub mod model_name;
pub mod path;
pub mod upstream_error;

pub use gojson::{created_at_now, json_kind, to_go_json};
pub use model_name::normalize_model_name;

/// Length of `v` as compact JSON, counted without building the text.
pub fn json_len(v: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_len_is_the_compact_length() {
        let v = serde_json::json!({"a": [1, "x\"y", null], "b": {"c": true}});
        assert_eq!(super::json_len(&v), v.to_string().len());
    }
}
