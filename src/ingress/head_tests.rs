//! Unit tests of `head`.

use super::*;

fn parts(fields: &[(&str, String)]) -> Parts {
    let mut builder = http::Request::post("/api/chat?x=1");
    for (name, value) in fields {
        builder = builder.header(*name, value);
    }
    builder.body(()).unwrap().into_parts().0
}

#[test]
fn the_size_is_the_heads_as_http1_writes_it() {
    let p = parts(&[("host", "a".into()), ("x-y", "bc".into())]);
    let written = "POST /api/chat?x=1 HTTP/1.1\r\nhost: a\r\nx-y: bc\r\n\r\n";
    assert_eq!(size(&p), written.len());
}

#[test]
fn heads_over_the_bounds_are_431() {
    let at_limit = "x".repeat(MAX_HEAD_BYTES - 200);
    assert!(check(&parts(&[("x-big", at_limit)])).is_ok());
    let over = "x".repeat(MAX_HEAD_BYTES);
    let e = check(&parts(&[("x-big", over)])).unwrap_err();
    assert_eq!(e.status(), 431);
    let many: Vec<(&str, String)> = (0..=MAX_FIELDS).map(|_| ("x-n", "1".into())).collect();
    assert_eq!(check(&parts(&many)).unwrap_err().status(), 431);
    assert!(check(&parts(&many[..MAX_FIELDS])).is_ok());
}

#[test]
fn hyper_parses_every_head_augur_must_answer() {
    const { assert!(HYPER_MAX_BUF > MAX_HEAD_BYTES * 4) };
    const { assert!(HYPER_MAX_FIELDS > MAX_FIELDS * 4) };
    const { assert!(HYPER_MAX_HEADER_LIST as usize > MAX_HEAD_BYTES * 4) };
}
