//! Policy files: any text is loaded or refused with an error naming the
//! file, never a panic, and within the bounds checked before parsing.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let files = [("10-fuzz.yaml".to_string(), text.to_string())];
    if let Err(e) = augur::policy::load_texts(&files, Path::new("/nonexistent-schemas")) {
        assert!(e.to_string().contains("10-fuzz.yaml"), "{e}");
    }
});
