//! Unit tests of `formats_common`.

use serde_json::json;

use super::pattern_for;
use crate::schema::pattern::to_grammar_pattern;

/// Strings each pattern admits.
const ADMITTED: &[(&str, &[&str])] = &[
    (
        "email",
        &["a@b.co", "jane.doe+x@mail-1.example.org", "A_1@x9.io"],
    ),
    (
        "hostname",
        &["localhost", "a-b.example.com", "x1.y2.z3.w4.v5"],
    ),
    (
        "uri",
        &[
            "https://example.com",
            "http://a.b:8080/x/y.html?q=1&lang=en",
            "https://api.example.org/v1/items",
        ],
    ),
];

/// Strings each pattern refuses: not the common form, or not valid.
const REFUSED: &[(&str, &[&str])] = &[
    (
        "email",
        &[
            "Alice",
            "<email>",
            "a@b",
            "@b.co",
            "a..b@c.co",
            "a@-b.co",
            "\"joe bloggs\"@example.com",
        ],
    ),
    ("hostname", &["-a.com", "a..b", "ab--c.com", "a_b.com"]),
    (
        "uri",
        &["example.com", "mailto:a@b.co", "https://", "ftp://x.org"],
    ),
];

/// The pattern as the validator runs it; the grammar keeps it.
fn regex(format: &str) -> jsonschema::Validator {
    let p = pattern_for(format).unwrap_or_else(|| panic!("no pattern for {format}"));
    assert!(to_grammar_pattern(p).is_ok(), "{format}");
    crate::validate::options()
        .build(&json!({"type": "string", "pattern": p}))
        .unwrap()
}

#[test]
fn common_forms_admit_the_usual_values() {
    for (format, values) in ADMITTED {
        let re = regex(format);
        for v in *values {
            assert!(re.is_valid(&json!(v)), "{format} refuses {v}");
        }
    }
}

#[test]
fn common_forms_refuse_names_and_rare_forms() {
    for (format, values) in REFUSED {
        let re = regex(format);
        for v in *values {
            assert!(!re.is_valid(&json!(v)), "{format} admits {v}");
        }
    }
}

/// What a pattern admits, the validator accepts for the format.
#[test]
fn every_admitted_value_is_valid_for_its_format() {
    for (format, values) in ADMITTED {
        let schema = json!({"type": "string", "format": format});
        let v = crate::validate::options().build(&schema).unwrap();
        for s in *values {
            assert!(v.is_valid(&json!(s)), "{format}: {s}");
        }
    }
}
