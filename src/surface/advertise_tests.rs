//! Unit tests of `advertise`.

use super::*;
use serde_json::json;

#[test]
fn tools_are_added_only_to_completion_models_without_them() {
    let p = Policy::permissive();
    let mut gemma = json!({"capabilities": ["completion", "vision"]});
    assert!(add_tools(&p, "gemma3", &mut gemma));
    assert_eq!(
        gemma["capabilities"],
        json!(["completion", "vision", "tools"])
    );
    let mut llama = json!({"capabilities": ["completion", "tools"]});
    assert!(!add_tools(&p, "llama3.2", &mut llama));
    let mut embed = json!({"capabilities": ["embedding"]});
    assert!(!add_tools(&p, "nomic", &mut embed));
}
