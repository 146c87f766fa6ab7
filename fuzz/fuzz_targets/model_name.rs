//! Model names: normalizing never panics and is idempotent, so every
//! spelling lands on one name.
#![no_main]

use augur::inputs::normalize_model_name;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    let once = normalize_model_name(name);
    assert_eq!(normalize_model_name(&once), once, "{name:?}");
});
