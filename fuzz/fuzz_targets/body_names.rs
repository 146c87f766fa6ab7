//! Reading the models a body names: never panics, and whenever serde_json
//! can also read the body as one object, both readings agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let fields: &'static [&'static str] = &["model", "name", "from"];
    let Ok(names) = augur::inputs::read_names(data, fields) else {
        return;
    };
    if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(data) {
        let want = fields
            .iter()
            .filter_map(|f| map.get(*f).and_then(Value::as_str).map(|m| (*f, m)))
            .filter(|(_, m)| !m.trim().is_empty())
            .map(|(f, m)| (f, m.to_string()));
        let got = names.models.iter().filter(|(f, _)| *f != "modelfile").cloned();
        assert!(want.eq(got), "readings differ");
    }
});
