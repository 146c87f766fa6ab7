//! Multipart forms: parsing never panics, and a parsed form survives
//! re-encoding unchanged.
#![no_main]

use augur::inputs::parse_multipart as parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(form) = parse(data, "B0und") else {
        return;
    };
    let boundary = form.fresh_boundary();
    let (_, encoded) = form.encode(&boundary);
    let again = parse(&encoded, &boundary).expect("a form augur wrote parses");
    assert_eq!(again, form);
});
