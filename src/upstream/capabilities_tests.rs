//! Unit tests of `capabilities`.

use serde_json::json;

use super::*;

#[test]
fn the_context_is_read_from_model_info_and_parameters() {
    let body = json!({
        "capabilities": ["completion"],
        "parameters": "stop     \"<eos>\"\nnum_ctx                        8192\ntemperature 1",
        "model_info": {"general.architecture": "gemma3", "gemma3.context_length": 131072}
    });
    let s = shown(&body);
    assert_eq!(s.capabilities, ["completion"]);
    assert_eq!(
        s.context,
        ModelContext {
            context_length: Some(131_072),
            num_ctx: Some(8192)
        }
    );
    assert_eq!(shown(&json!({})).context, ModelContext::default());
    let odd = json!({"parameters": "num_ctx x", "model_info": {"gemma3.context_length": 5}});
    assert_eq!(shown(&odd).context, ModelContext::default());
}
