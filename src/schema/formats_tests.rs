//! Tests of the format patterns: the suite's valid values, what they
//! refuse, their run bounds, their cost and the grammar rewrite.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

use super::pattern_for;
use crate::schema::pattern::to_grammar_pattern;

/// Longest run of one character class the patterns admit.
const MAX_RUN: usize = 24;

/// Most marks (separators) one URI component holds.
const MAX_MARKS: usize = 12;

/// The formats [`pattern_for`] narrows.
const NARROWED: [&str; 6] = [
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
];

/// Strings each pattern admits; every one must be valid for the
/// validator's own `format` check.
const SAMPLES: &[(&str, &[&str])] = &[
    (
        "ipv4",
        &["0.0.0.0", "192.168.1.254", "255.255.255.255", "10.0.99.9"],
    ),
    (
        "ipv6",
        &[
            "0:0:0:0:0:0:0:1",
            "2001:db8:85a3:0:0:8a2e:370:7334",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::1",
            "fe80::1:2",
            "2001:db8::",
            "1:2:3::4:5:6:7",
            "::ffff:10.0.0.1",
            "1:2:3:4:5:6:1.2.3.4",
        ],
    ),
    (
        "uri",
        &[
            "http://a",
            "https://example.com:8080/a/b.c?x=1&y=2",
            "https://x.y/~z_-",
            "mailto:ada@example.com",
            "urn:isbn:0451450523",
            "ftp://x",
            "https://a/?q",
            "https://user:pw@example.org/p/a%20b;v=1?q=a/b?c#frag/x",
            "file:/etc/hosts",
            "http://[::1]:8080/",
            "http://[v7.a:b]/",
            "a:",
        ],
    ),
    (
        "uri-reference",
        &[
            "https://example.com/",
            "",
            "/a/b",
            "a/b:c",
            "../x",
            "?q=1",
            "#top",
            "//host/p",
            "//",
            "mailto:a@b.co",
        ],
    ),
    (
        "iri",
        &[
            "https://example.com/a",
            "https://例え.テスト/パス?キー=値#片",
            "http://bücher.de/straße",
        ],
    ),
    (
        "iri-reference",
        &["https://example.com/a", "/päth", "résumé", "#frâg", ""],
    ),
];

/// Strings each pattern refuses, none valid for the format.
const REFUSED: &[(&str, &[&str])] = &[
    ("ipv4", &["256.1.1.1", "1.2.3", "01.2.3.4"]),
    (
        "ipv6",
        &[
            "g::1",
            ":::",
            "1::2::3",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7",
        ],
    ),
    (
        "uri",
        &[
            "example.com",
            "<url>",
            "http://a b",
            "//a/b",
            "http://[::g]/",
            "http://a/%2",
            "http://a:b/",
        ],
    ),
    ("uri-reference", &["1:b", "a b", "http://a:b/", "/%zz"]),
    ("iri", &["résumé", "http://a/\u{0085}", "http://a/\u{E000}"]),
    ("iri-reference", &["ä:b", "#\u{E000}"]),
];

/// The pattern as the validator runs it (ECMA-262 semantics).
fn regex(format: &str) -> jsonschema::Validator {
    let p = pattern_for(format).unwrap();
    crate::validate::options()
        .build(&json!({"type": "string", "pattern": p}))
        .unwrap()
}

/// The validator's own check of `format`.
fn format_check(format: &str) -> jsonschema::Validator {
    crate::validate::options()
        .build(&json!({"type": "string", "format": format}))
        .unwrap()
}

#[test]
fn samples_match_their_pattern_and_the_validators_format() {
    for (format, samples) in SAMPLES {
        let re = regex(format);
        let v = format_check(format);
        for s in *samples {
            assert!(re.is_valid(&json!(s)), "{format}: pattern refuses {s:?}");
            assert!(v.is_valid(&json!(s)), "{format}: validator refuses {s:?}");
        }
    }
}

#[test]
fn non_values_are_refused() {
    for (format, bad) in REFUSED {
        let (re, v) = (regex(format), format_check(format));
        for s in *bad {
            assert!(!re.is_valid(&json!(s)), "{format}: pattern admits {s:?}");
            assert!(!v.is_valid(&json!(s)), "{format}: validator admits {s:?}");
        }
    }
    // Valid, but a URI without a host is no answer.
    for s in ["https://", "http:///a"] {
        assert!(format_check("uri").is_valid(&json!(s)));
        assert!(!regex("uri").is_valid(&json!(s)), "admits {s:?}");
    }
}

/// The suite's invalid values are refused too.
#[test]
fn narrowed_formats_refuse_the_invalid_suite_examples() {
    for (format, bad) in SUITE_INVALID {
        let re = regex(format);
        for s in *bad {
            assert!(!re.is_valid(&json!(s)), "{format}: pattern admits {s:?}");
        }
    }
}

/// Strings holding a run one longer than [`MAX_RUN`] where the
/// pattern admits runs, and the same strings one shorter.
fn runs(n: usize) -> Vec<(&'static str, String)> {
    let r = |c: &str| c.repeat(n);
    let mut out = Vec::new();
    for format in ["uri", "iri"] {
        out.extend([
            (format, format!("http://{}", r("a"))),
            (format, format!("http://a.{}.b", r("a"))),
            (format, format!("http://{}@a", r("u"))),
            (format, format!("http://a/{}", r("0"))),
            (format, format!("http://a/?{}=1", r("q"))),
            (format, format!("http://a/?q={}", r("0"))),
            (format, format!("http://a/#{}", r("f"))),
            (format, format!("urn:{}", r("x"))),
            (format, format!("urn:x:{}", r("x"))),
        ]);
    }
    for format in ["uri-reference", "iri-reference"] {
        out.extend([
            (format, r("a")),
            (format, format!("/{}", r("a"))),
            (format, format!("a/{}", r("a"))),
            (format, format!("//{}", r("a"))),
        ]);
    }
    out
}

#[test]
fn no_pattern_admits_a_run_longer_than_the_bound() {
    for (format, s) in runs(MAX_RUN + 1) {
        assert!(!regex(format).is_valid(&json!(s)), "{format}: admits {s:?}");
    }
    for (format, s) in runs(MAX_RUN) {
        assert!(regex(format).is_valid(&json!(s)), "{format}: refuses {s:?}");
    }
}

/// Strings holding one more mark than [`MAX_MARKS`] in a component, and
/// the same strings with one fewer: runs of separators (and in IRIs of
/// non-ASCII characters) are bounded as well.
fn marks(n: usize) -> Vec<(&'static str, String)> {
    let r = |c: &str| c.repeat(n);
    let mut out = Vec::new();
    for format in ["uri", "uri-reference", "iri", "iri-reference"] {
        out.extend([
            (format, format!("a:{}", r(":"))),
            (format, format!("http://a/{}", r("/"))),
            (format, format!("http://a?{}", r("?"))),
            (format, format!("http://a#{}", r("."))),
            (format, format!("http://a/{}", r("%20"))),
            (format, format!("http://{}@a", r(":"))),
        ]);
    }
    for format in ["uri-reference", "iri-reference"] {
        out.extend([(format, r(".")), (format, format!("/{}", r("@")))]);
    }
    for format in ["iri", "iri-reference"] {
        out.extend([
            (format, format!("http://{}", r("é"))),
            (format, format!("http://a/{}", r("é"))),
            (format, format!("http://a?{}", r("\u{E000}"))),
            (format, format!("http://a#{}", r("文"))),
        ]);
    }
    out
}

#[test]
fn no_component_admits_more_marks_than_the_bound() {
    for (format, s) in marks(MAX_MARKS + 1) {
        assert!(!regex(format).is_valid(&json!(s)), "{format}: admits {s:?}");
    }
    for (format, s) in marks(MAX_MARKS) {
        assert!(regex(format).is_valid(&json!(s)), "{format}: refuses {s:?}");
        assert!(
            format_check(format).is_valid(&json!(s)),
            "{format}: validator refuses {s:?}"
        );
    }
}

/// The longest strings the patterns admit, or nearly: each must be
/// valid for the validator too.
#[test]
fn the_longest_values_admitted_are_valid() {
    let r = |c: &str, n: usize| c.repeat(n);
    let label = format!("a{}", r("-b", 11)) + "c";
    let word = r("w", 24);
    // Every component at its bound: 12 marks, each followed by a full run;
    // one that must not start with some marks (an IRI host, the first
    // segment of a relative path) holds 12 counting its first character.
    let component = |mark: &str, n: usize| format!("{word}{}", format!("{mark}{word}").repeat(n));
    let uri = format!(
        "{}://{}@{}:9999/{}?{}#{}",
        r("s", 16),
        component(":", 12),
        [label.as_str(); 6].join("."),
        component("/", 12),
        component("&", 12),
        component("?", 12)
    );
    let iri = format!(
        "{}://{}@ü{}/{}?{}#{}",
        r("s", 16),
        component("é", 12),
        component(".", 11),
        component("ä", 12),
        component("\u{E000}", 12),
        component("ö", 12)
    );
    let longest = [
        (
            "uri",
            format!(
                "https://{label}:9999/{}?{}={}",
                vec![r("p", 24); 6].join("/"),
                r("k", 24),
                r("v", 24)
            ),
        ),
        ("uri", uri.clone()),
        ("uri-reference", uri),
        (
            "uri-reference",
            format!("{}/{}", component(".", 11), component(":", 12)),
        ),
        ("iri", iri.clone()),
        ("iri-reference", iri),
        (
            "ipv6",
            "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".into(),
        ),
    ];
    for (format, s) in longest {
        assert!(
            regex(format).is_valid(&json!(s)),
            "{format}: pattern refuses {s:?}"
        );
        assert!(
            format_check(format).is_valid(&json!(s)),
            "{format}: validator refuses {s:?}"
        );
    }
}

#[test]
fn every_pattern_survives_the_grammar_rewrite_with_its_language() {
    for (format, samples) in SAMPLES {
        let p = pattern_for(format).unwrap();
        let rewritten = to_grammar_pattern(p).unwrap();
        let re = crate::validate::options()
            .build(&json!({"type": "string", "pattern": rewritten}))
            .unwrap();
        for s in *samples {
            assert!(
                re.is_valid(&json!(s)),
                "{format}: rewritten pattern refuses {s:?}"
            );
        }
    }
    assert_eq!(pattern_for("date"), None, "the converter has its own rule");
    assert_eq!(pattern_for("phone"), None);
}

/// Nothing a pattern admits needs escaping in JSON: the converter writes
/// pattern characters verbatim between the string's quotes. The patterns
/// list what they admit (no `.`, no negated class, no `\s`…), and none
/// of it is a quote, a backslash or a control character.
#[test]
fn no_pattern_admits_a_quote_a_backslash_or_a_control_character() {
    for format in NARROWED {
        let p = pattern_for(format).unwrap();
        let mut chars = p.chars();
        let mut in_class = false;
        while let Some(c) = chars.next() {
            assert!(c != '"' && !c.is_control(), "{format}: {c:?} in {p}");
            match c {
                '\\' => {
                    let e = chars.next();
                    assert!(
                        matches!(e, Some('.' | '[' | ']' | '?')),
                        "{format}: escape {e:?}"
                    );
                }
                '[' if !in_class => {
                    in_class = true;
                    assert!(!chars.as_str().starts_with('^'), "{format}: negated class");
                }
                ']' if in_class => in_class = false,
                '.' => assert!(in_class, "{format}: `.` outside a class"),
                _ => {}
            }
        }
        let re = regex(format);
        for c in ['"', '\\', '\0', '\n', '\t', '\u{7f}', '\u{85}'] {
            for s in [format!("http://a/{c}"), format!("a{c}"), format!("::{c}")] {
                assert!(!re.is_valid(&json!(s)), "{format}: admits {s:?}");
            }
        }
    }
}

/// Compiled by the validator (augur compiles the grammar copy of tool
/// parameters), each pattern stays well inside its regex size limit.
#[test]
fn every_pattern_compiles_within_half_the_validators_regex_limit() {
    let options = || {
        jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::fancy_regex().size_limit(1 << 20))
    };
    for format in NARROWED {
        let p = pattern_for(format).unwrap();
        assert!(
            options()
                .build(&json!({"type": "string", "pattern": p}))
                .is_ok(),
            "{format}: pattern too costly"
        );
    }
}

/// The formats whose suite examples no bounded, JSON-safe pattern admits.
#[test]
fn formats_no_pattern_can_narrow_are_not_narrowed() {
    for format in [
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "json-pointer",
        "duration",
    ] {
        assert_eq!(pattern_for(format), None, "{format}");
    }
    for format in SUITE_FORMATS {
        assert_eq!(
            pattern_for(format).is_some(),
            NARROWED.contains(format),
            "{format}"
        );
    }
}

/// The rule for narrowing: a pattern stands for a format only if it admits
/// every valid example of the suite (as the validator runs it, before and
/// after the grammar rewrite), and the validator itself agrees on them.
#[test]
fn every_narrowed_format_admits_all_valid_suite_examples() {
    let mut failures = Vec::new();
    for format in SUITE_FORMATS {
        let Some(p) = pattern_for(format) else {
            continue;
        };
        let Some((_, examples)) = SUITE_VALID.iter().find(|(f, _)| f == format) else {
            failures.push(format!("{format}: narrowed without suite examples"));
            continue;
        };
        let re = regex(format);
        let rewritten = crate::validate::options()
            .build(&json!({"type": "string", "pattern": to_grammar_pattern(p).unwrap()}))
            .unwrap();
        let v = format_check(format);
        for s in *examples {
            let s = json!(s);
            if !v.is_valid(&s) {
                failures.push(format!("{format}: validator refuses {s}"));
            }
            if !re.is_valid(&s) {
                failures.push(format!("{format}: pattern refuses {s}"));
            } else if !rewritten.is_valid(&s) {
                failures.push(format!("{format}: rewritten pattern refuses {s}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The sanitizer sends a narrowed format as its rewritten pattern, which
/// the strictest converter takes; any other format it drops.
#[test]
fn narrowed_formats_reach_the_grammar_as_patterns() {
    let field = |format: &str| {
        let schema =
            json!({"type": "object", "properties": {"f": {"type": "string", "format": format}}});
        crate::schema::sanitize(&schema).unwrap()
    };
    for format in NARROWED {
        let out = field(format);
        let mut errs = Vec::new();
        crate::schema::tests::check(&out.schema, "", &mut errs);
        assert!(errs.is_empty(), "{format}: {errs:?}");
        let sent = &out.schema["properties"]["f"];
        assert_eq!(sent.get("format"), None, "{format}");
        assert_eq!(
            sent["pattern"].as_str(),
            Some(
                to_grammar_pattern(pattern_for(format).unwrap())
                    .unwrap()
                    .as_str()
            )
        );
        let note = format!("format \"{format}\" -> pattern");
        assert!(
            out.changes.iter().any(|c| c.contains(&note)),
            "{:?}",
            out.changes
        );
    }
    for format in ["email", "hostname", "json-pointer", "duration"] {
        let out = field(format);
        assert_eq!(out.schema["properties"]["f"], json!({"type": "string"}));
        let note = format!("dropped format \"{format}\"");
        assert!(
            out.changes.iter().any(|c| c.contains(&note)),
            "{:?}",
            out.changes
        );
    }
}

/// Every string a pattern admits is valid for the validator: random
/// strings of each pattern's language.
#[test]
fn whatever_a_pattern_admits_is_valid() {
    for format in NARROWED {
        let p = pattern_for(format).unwrap();
        let strings = proptest::string::string_regex(&p[1..p.len() - 1]).unwrap();
        let (re, v) = (regex(format), format_check(format));
        let mut runner = TestRunner::new(Config::with_cases(CASES));
        let outcome = runner.run(&strings, |s| {
            prop_assert!(
                re.is_valid(&json!(s)),
                "{}: pattern refuses {:?}",
                format,
                s
            );
            prop_assert!(
                v.is_valid(&json!(s)),
                "{}: validator refuses {:?}",
                format,
                s
            );
            Ok(())
        });
        assert!(outcome.is_ok(), "{outcome:?}");
    }
}

/// Random strings per pattern.
const CASES: u32 = 500;

/// Every format of the suite's `optional/format` directory.
const SUITE_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "duration",
    "ecmascript-regex",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "iri-reference",
    "iri",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "unknown",
    "uri-reference",
    "uri-template",
    "uri",
    "uuid",
];

// The official JSON-Schema test suite, github.com/json-schema-org/
// JSON-Schema-Test-Suite (commit 44401e0c046704b476ec9d2e2fccdaee618f259d):
// the string data of the tests of `tests/draft2020-12/optional/format/`.

/// Valid values (`"valid": true`), for every format [`pattern_for`]
/// narrows or once did.
const SUITE_VALID: &[(&str, &[&str])] = &[
    // tests/draft2020-12/optional/format/email.json
    (
        "email",
        &[
            "joe.bloggs@example.com",
            "te~st@example.com",
            "~test@example.com",
            "test~@example.com",
            "\"joe bloggs\"@example.com",
            "\"joe..bloggs\"@example.com",
            "\"joe@bloggs\"@example.com",
            "joe.bloggs@[127.0.0.1]",
            "joe.bloggs@[IPv6:::1]",
            "te.s.t@example.com",
        ],
    ),
    // tests/draft2020-12/optional/format/idn-email.json
    (
        "idn-email",
        &[
            "실례@실례.테스트",
            "joe.bloggs@example.com",
            "δοκιμή@example.com",
            "\"δοκιμή\"@example.com",
            "user@café.com",
            "café@example.com",
            "\u{85}@example.com",
            "\u{ffff}@example.com",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@example.com",
            "\u{1d54f}@example.com",
        ],
    ),
    // tests/draft2020-12/optional/format/hostname.json
    (
        "hostname",
        &[
            "www.example.com",
            "hostname",
            "h0stn4me",
            "1host",
            "hostnam3",
            "host-name",
            "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk.com",
            "a--b.com",
            "xn--9n2bp8q.xn--9t4b11yi5a",
            "xn--zca29lwxobi7a",
            "xn--qmbc",
            "xn--ll-0ea",
            "xn--wva3je",
            "xn--4dbc5h",
            "xn--4dbc8h",
            "xn--k8j5u",
            "xn--bck0j",
            "xn--vek778f",
            "xn--ngba1o",
            "xn--0-gyc",
            "xn--11b2ezcw70k",
            "xn--11b2ezcs70k",
            "xn--ngba5hb2804a",
        ],
    ),
    // tests/draft2020-12/optional/format/idn-hostname.json
    (
        "idn-hostname",
        &[
            "실례.테스트",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "xn--ihqwcrb4cv8a8dqg056pqjye",
            "ßς་〇",
            "۽۾",
            "l·l",
            "α͵β",
            "א׳ב",
            "א״ב",
            "・ぁ",
            "・ァ",
            "・丈",
            "ب٠ب",
            "۰0",
            "क्\u{200d}ष",
            "क्\u{200c}ष",
            "بي\u{200c}بي",
            "hostname",
            "host-name",
            "h0stn4me",
            "1host",
            "hostnam3",
            "a.b",
            "a。b",
            "a．b",
            "a｡b",
            "παράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπα.com",
            "παράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπα。com",
            "παράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπα．com",
            "παράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπαράδειγμαπα｡com",
        ],
    ),
    // tests/draft2020-12/optional/format/ipv4.json
    (
        "ipv4",
        &[
            "192.168.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "200.0.0.0",
            "10.20.30.40",
        ],
    ),
    // tests/draft2020-12/optional/format/ipv6.json
    (
        "ipv6",
        &[
            "::1",
            "::abef",
            "::",
            "::42:ff:1",
            "d6::",
            "1:d6::42",
            "1::d6:192.168.0.1",
            "1:2::192.168.0.1",
            "::ffff:192.168.0.1",
            "1:2:3:4:5:6:7:8",
            "1000:1000:1000:1000:1000:1000:255.255.255.255",
        ],
    ),
    // tests/draft2020-12/optional/format/uri.json
    (
        "uri",
        &[
            "http://foo.bar/?baz=qux#quux",
            "http://foo.com/blah_(wikipedia)_blah#cite-1",
            "http://foo.bar/?q=Test%20URL-encoded%20stuff",
            "http://xn--nw2a.xn--j6w193g/",
            "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com",
            "http://223.255.255.254",
            "ftp://ftp.is.co.za/rfc/rfc1808.txt",
            "http://www.ietf.org/rfc/rfc2396.txt",
            "ldap://[2001:db8::7]/c=GB?objectClass?one",
            "mailto:John.Doe@example.com",
            "news:comp.infosystems.www.servers.unix",
            "tel:+1-816-555-1212",
            "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
            "http://087.10.0.1/",
            "http://999.999.999.999/",
        ],
    ),
    // tests/draft2020-12/optional/format/iri.json
    (
        "iri",
        &[
            "http://ƒøø.ßår/?∂éœ=πîx#πîüx",
            "http://ƒøø.com/blah_(wîkïpédiå)_blah#ßité-1",
            "http://ƒøø.ßår/?q=Test%20URL-encoded%20stuff",
            "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com",
            "http://[2001:0db8:85a3:0000:0000:8a2e:0370:7334]",
            "http://[2001:db8::1]",
            "http://[V1.fe]",
            "http://192.168.0.1/p",
            "urn:example:resource",
            "file:/etc/hosts",
            "http://ƒøø.ßår/\u{10300}",
            "http://ƒøø.ßår/?q=\u{f0000}",
        ],
    ),
    // tests/draft2020-12/optional/format/uri-reference.json
    (
        "uri-reference",
        &[
            "http://foo.bar/?baz=qux#quux",
            "//foo.bar/?baz=qux#quux",
            "/abc",
            "abc",
            "#fragment",
            "http://087.10.0.1/",
            "http://999.999.999.999/",
            "",
            "?query=1",
            "//",
            "./this:that",
        ],
    ),
    // tests/draft2020-12/optional/format/iri-reference.json
    (
        "iri-reference",
        &[
            "http://ƒøø.ßår/?∂éœ=πîx#πîüx",
            "//ƒøø.ßår/?∂éœ=πîx#πîüx",
            "/âππ",
            "âππ",
            "#ƒrägmênt",
        ],
    ),
    // tests/draft2020-12/optional/format/json-pointer.json
    (
        "json-pointer",
        &[
            "/foo/bar~0/baz~1/%a",
            "/foo//bar",
            "/foo/bar/",
            "",
            "/foo",
            "/foo/0",
            "/",
            "/a~1b",
            "/c%d",
            "/e^f",
            "/g|h",
            "/i\\j",
            "/k\"l",
            "/ ",
            "/m~0n",
            "/foo/-",
            "/foo/-/bar",
            "/~1~0~0~1~1",
            "/~1.1",
            "/~0.1",
            "/foo/bar/\u{1f60e}",
            "/foo\u{0}bar\n\tbaz",
        ],
    ),
    // tests/draft2020-12/optional/format/duration.json
    (
        "duration",
        &[
            "P4DT12H30M5S",
            "P4Y",
            "PT0S",
            "P0D",
            "P1M",
            "PT1M",
            "PT36H",
            "P1DT12H",
            "P2W",
            "P1Y2M3DT4H5M6S",
            "P1Y2M3D",
            "PT1H2M3S",
            "P1M2D",
            "PT1H30M",
            "P10Y10M10DT10H10M10S",
            "P1Y2M",
            "PT1H2M",
            "PT1M2S",
            "P01D",
            "P999999999999999999999999999999999999999999999999999999999999999999999999999999D",
        ],
    ),
];

/// Invalid values (`"valid": false`) of the formats narrowed.
const SUITE_INVALID: &[(&str, &[&str])] = &[
    // tests/draft2020-12/optional/format/ipv4.json
    (
        "ipv4",
        &[
            "127.0.0.0.1",
            "256.256.256.256",
            "127.0",
            "127.1",
            "127.0.1",
            "0x7f000001",
            "2130706433",
            "1২7.0.0.1",
            "１９２.１６８.１.１",
            "\u{1d7cf}\u{1d7d7}\u{1d7d0}.\u{1d7cf}\u{1d7d4}\u{1d7d6}.\u{1d7cf}.\u{1d7cf}",
            "192.168.1.0/24",
            " 192.168.0.1",
            "192.168.0.1 ",
            "192.168.0.1\n",
            "0x7f.0.0.1",
            "0o10.0.0.1",
            "192.168..1",
            ".192.168.0.1",
            "192.168.0.1.",
            "",
            "+1.2.3.4",
            "-1.2.3.4",
            "1e2.0.0.1",
            "192.168.a.1",
            "192. 168.0.1",
            "192.168.0.1\t",
            "192.168.0.1\u{0}.evil.com",
            "192.168.0.1:80",
            "::ffff:192.168.0.1",
            "192.168.0.256",
        ],
    ),
    // tests/draft2020-12/optional/format/ipv6.json
    (
        "ipv6",
        &[
            "12345::",
            "::abcef",
            "1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1",
            "::laptop",
            ":2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:",
            ":2:3:4::8",
            "1::d6::42",
            "1::2:192.168.256.1",
            "1::2:192.168.ff.1",
            "1:2:3:4:5:::8",
            "1:2:3:4:5:6:7",
            "1",
            "127.0.0.1",
            "1:2:3:4:1.2.3",
            "  ::1",
            "::1  ",
            "fe80::/64",
            "fe80::a%eth1",
            "100:100:100:100:100:100:255.255.255.255.255",
            "100:100:100:100:100:100:100:255.255.255.255",
            "1:2:3:4:5:6:7:৪",
            "1:2::192.16৪.0.1",
            "[::1]",
            "::ffff:192.168.0.01",
        ],
    ),
    // tests/draft2020-12/optional/format/uri.json
    (
        "uri",
        &[
            "//foo.bar/?baz=qux#quux",
            "/abc",
            "\\\\WINDOWS\\fileshare",
            "abc",
            "http:// shouldfail.com",
            ":// should fail",
            "bar,baz:foo",
            "https://[@example.org/test.txt",
            "https://example.org/foobar®.txt",
            "https://example.org/foobar\\.txt",
            "https://example.org/foobar\".txt",
            "https://example.org/foobar<>.txt",
            "https://example.org/foobar{}.txt",
            "https://example.org/foobar^.txt",
            "https://example.org/foobar`.txt",
            "https://example.org/foo bar.txt",
            "https://example.org/foobar|.txt",
            "http://example.com/%6G",
            "http://example.com/%A",
            "http://example.com/%",
            "1http://example.com",
            "ht_tp://example.com",
            "http://example.com:abc/path",
            "http://[::ffff:01.2.3.4]",
            "http:/[::1]",
        ],
    ),
    // tests/draft2020-12/optional/format/iri.json
    (
        "iri",
        &[
            "http://2001:0db8:85a3:0000:0000:8a2e:0370:7334",
            "/abc",
            "\\\\WINDOWS\\filëßåré",
            "âππ",
            "http://[::ffff:192.168.0.01]",
            "http://ƒøø.ßår/\n",
        ],
    ),
    // tests/draft2020-12/optional/format/uri-reference.json
    (
        "uri-reference",
        &[
            "\\\\WINDOWS\\fileshare",
            "#frag\\ment",
            "/foobar®.txt",
            "https://example.org/foobar\\.txt",
            "/%zz",
            "/a\"b",
            "/[::1]",
            "//example.com:abc/p",
            "//a@b@example.com/",
            "//[::ffff:192.168.0.01]/p",
            "1:b",
        ],
    ),
    // tests/draft2020-12/optional/format/iri-reference.json
    ("iri-reference", &["\\\\WINDOWS\\filëßåré", "#ƒräg\\mênt"]),
];
