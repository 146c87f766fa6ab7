//! Request paths: canonicalizing never panics, gives a canonical path, and
//! is idempotent.
#![no_main]

use augur::inputs::{canonical, is_canonical};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if is_canonical(raw) {
        assert_eq!(canonical(raw).as_deref(), Ok(raw));
    }
    if let Ok(c) = canonical(raw) {
        assert!(is_canonical(&c) || c.contains('%'), "{c:?}");
        assert_eq!(canonical(&c).as_deref(), Ok(c.as_str()));
    }
});
