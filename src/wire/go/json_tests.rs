use serde_json::json;

use super::*;

#[test]
fn escapes_like_go() {
    let v = json!({"content": "<think>a & b</think>\u{2028}é\u{2029}"});
    assert_eq!(
        to_go_json(&v),
        r#"{"content":"\u003cthink\u003ea \u0026 b\u003c/think\u003e\u2028é\u2029"}"#
    );
    assert_eq!(
        &ndjson_line(&json!({"a": "<"}))[..],
        b"{\"a\":\"\\u003c\"}\n"
    );
    // Other characters after 0xE2 are left alone.
    assert_eq!(
        to_go_json(&json!("\u{2026}\u{2030}")),
        "\"\u{2026}\u{2030}\""
    );
}

#[test]
fn strings_are_escaped_like_go() {
    let v = json!("a<b>&\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}\u{2028}é");
    let want = concat!(
        r#""a\u003cb\u003e\u0026\"\\\n\r\t\b\f\u0001"#,
        "\u{7f}",
        r#"\u2028é""#
    );
    assert_eq!(marshal(&v), want);
    assert_eq!(to_go_json(&v), want);
}

#[test]
fn numbers_are_kept_or_written_as_go_float64s() {
    let cases = [
        (json!(1), "1", "1"),
        (json!(1.0), "1", "1.0"),
        (json!(-2.5), "-2.5", "-2.5"),
        (json!(0.000001), "0.000001", "1e-6"),
        (json!(1e-7), "1e-7", "1e-7"),
        (json!(1.5e-10), "1.5e-10", "1.5e-10"),
        (json!(1e20), "100000000000000000000", "1e+20"),
        (json!(1e21), "1e+21", "1e+21"),
        (json!(1.25e300), "1.25e+300", "1.25e+300"),
        (
            json!(9007199254740993u64),
            "9007199254740992",
            "9007199254740993",
        ),
        (json!(-3), "-3", "-3"),
        (json!(0), "0", "0"),
    ];
    for (v, go, serde) in cases {
        assert_eq!(marshal(&v), go, "{v}");
        assert_eq!(to_go_json(&v), serde, "{v}");
        assert_eq!(to_go_json(&v), v.to_string(), "{v}");
    }
}

#[test]
fn maps_are_sorted_only_when_asked() {
    let v = json!({"b": 1, "a": {"d": 2, "c": [true, null, {"f": 1, "e": 0}]}});
    assert_eq!(
        marshal(&v),
        r#"{"b":1,"a":{"d":2,"c":[true,null,{"f":1,"e":0}]}}"#
    );
    assert_eq!(
        marshal_sorted(&v),
        r#"{"a":{"c":[true,null,{"e":0,"f":1}],"d":2},"b":1}"#
    );
}

#[test]
fn objects_sort_like_go_maps() {
    let v = sorted(vec![
        ("type", json!("x")),
        ("item", json!({"b": 1, "a": 2})),
    ]);
    assert_eq!(v.to_string(), r#"{"item":{"b":1,"a":2},"type":"x"}"#);
    assert_eq!(
        sorted_deep(&json!({"b": [{"d": 1, "c": 2}], "a": 0})).to_string(),
        r#"{"a":0,"b":[{"c":2,"d":1}]}"#
    );
}

#[test]
fn floats_print_like_go() {
    assert_eq!(float(1.0).to_string(), "1");
    assert_eq!(float(0.5).to_string(), "0.5");
    assert_eq!(float(-3.0).to_string(), "-3");
    assert_eq!(float(f64::NAN), Value::Null);
}
