use serde_json::{Value, json};

use super::*;

fn text(s: &str) -> Arguments {
    read(Some(&Value::String(s.into())))
}

fn unreadable(s: &str) -> String {
    match text(s) {
        Arguments::Unreadable { why, written } => {
            assert_eq!(written, Value::String(s.into()));
            why
        }
        read => panic!("{s:?} was read: {read:?}"),
    }
}

/// Strict JSON reads exactly as `serde_json` reads it.
#[test]
fn strict_json_reads_as_serde_json_does() {
    for s in [
        r#"{"url": "https://example.com/", "n": 1, "f": 1.5, "neg": -0, "e": 1e5}"#,
        r#"{"big": 18446744073709551615, "small": -9223372036854775808, "huge": 1e308}"#,
        r#"{"over": 18446744073709551616, "tiny": 5e-324, "under": 1e-400, "x": 0.1e-2}"#,
        r#"{"s": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00", "u": "ü€𝄞"}"#,
        r#" [1, [2, [3, {}]], [], {"a": null, "b": true, "c": false}] "#,
        r#""a string""#,
        "42",
        "\t{\n\"a\" :\r[ ]}\n",
    ] {
        let strict: Value = serde_json::from_str(s).unwrap();
        assert_eq!(text(s), Arguments::Read(strict), "{s}");
    }
}

/// What Python's `json.loads` and JavaScript's `JSON.parse` read beyond
/// strict JSON is read as they read it, within a double's range.
#[test]
fn lenient_readings_are_what_clients_read() {
    let max = f64::MAX;
    for (s, want) in [
        (r#"{"n": NaN}"#, json!({"n": null})),
        (r#"{"n": Infinity}"#, json!({"n": max})),
        (r#"{"n": -Infinity}"#, json!({"n": -max})),
        (r#"{"n": 1e400}"#, json!({"n": max})),
        (r#"{"n": -1E+400}"#, json!({"n": -max})),
        (
            &format!(r#"{{"n": 1{}}}"#, "0".repeat(400)),
            json!({"n": max}),
        ),
        (r#"{"s": "a\ud800b"}"#, json!({"s": "a\u{fffd}b"})),
        (
            r#"{"s": "\udc00\ud800\u0041"}"#,
            json!({"s": "\u{fffd}\u{fffd}A"}),
        ),
        (
            r#"{"url": "http://169.254.169.254/\ud800", "n": NaN}"#,
            json!({"url": "http://169.254.169.254/\u{fffd}", "n": null}),
        ),
        ("", json!({})),
        ("  \n", json!({})),
    ] {
        assert!(
            serde_json::from_str::<Value>(s).is_err() || s.trim().is_empty(),
            "{s} is strict JSON"
        );
        assert_eq!(text(s), Arguments::Read(want), "{s}");
    }
}

#[test]
fn what_no_reader_reads_alike_is_unreadable() {
    for (s, why) in [
        (r#"{"url": "http://a\@b/"}"#, "escape"),
        (r#"{'url': 'http://127.0.0.1/'}"#, "key"),
        (r#"{url: 1}"#, "key"),
        (r#"{"a": 1,}"#, "key"),
        (r#"[1, 2,]"#, "value"),
        (r#"{"a": 01}"#, "leading zero"),
        (r#"{"a": .5}"#, "value"),
        (r#"{"a": 1} {"b": 2}"#, "end"),
        (r#"{"a": "x"#, "does not end"),
        ("{\"a\": \"x\ny\"}", "control"),
        (r#"{"a": "\u12"}"#, "hex"),
        (
            r#"{"url": "https://example.com/", "url": "http://127.0.0.1/"}"#,
            "twice",
        ),
        (r#"{"a": nan}"#, "value"),
        (r#"{"a": +1}"#, "value"),
        (r#"// comment"#, "value"),
    ] {
        let got = unreadable(s);
        assert!(got.contains(why), "{s}: {got}");
    }
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert!(unreadable(&deep).contains("nested"));
    let fine = format!("{}{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
    assert!(matches!(text(&fine), Arguments::Read(_)));
}

#[test]
fn objects_and_absent_arguments_are_taken_as_they_are() {
    let v = json!({"url": "http://127.0.0.1/"});
    assert_eq!(read(Some(&v)), Arguments::Read(v.clone()));
    assert_eq!(read(None), Arguments::Read(Value::Null));
    assert_eq!(Arguments::Read(v.clone()).shown(), &v);
    assert_eq!(
        text("{").shown(),
        &Value::String("{".into()),
        "the audit log sees what was written"
    );
}
