//! String `format`s the grammar converter has no rule for, as patterns it
//! can enforce.
//!
//! llama.cpp's converter writes grammars for `date`, `time`, `date-time`
//! and the `uuid` family itself; any other `format` it drops, so the model
//! is free to write a non-email where the validator then wants an email.
//! For the formats below, the grammar copy gets an anchored pattern
//! instead: a conservative subset of the format's language (every string
//! the pattern admits is valid for the validator), written in the subset
//! [`super::pattern::to_grammar_pattern`] keeps. Validation still checks
//! the client's `format` itself.
//!
//! No repetition in them admits more than 24 characters. Ollama
//! ends an answer, unfinished, once the model has written the same token
//! more than 30 times in a row, and small models fall into such runs
//! inside strings (Gemma writes digits one token each:
//! `"10000000000000000000000000000000.000…`). With every run bounded
//! below that cut, the grammar makes the model write a separator (`.`,
//! `@`, `/`) first, and the answer completes.

/// One DNS label: letters and digits, single inner hyphens (the
/// validator refuses `ab--c`, IDNA's reserved form), at most 24 characters.
macro_rules! label {
    () => {
        "[A-Za-z0-9](?:-?[A-Za-z0-9]){0,23}"
    };
}

/// A host name of one to five labels.
macro_rules! host {
    () => {
        concat!(label!(), r"(?:\.", label!(), "){0,4}")
    };
}

/// An e-mail address: a local part of up to three dotted parts (at most
/// 62 characters: the validator refuses more than 64), a domain with an
/// alphabetic top-level label.
const EMAIL: &str = concat!(
    r"^[A-Za-z0-9_+-]{1,20}(?:\.[A-Za-z0-9_+-]{1,20}){0,2}@",
    label!(),
    r"(?:\.",
    label!(),
    r"){0,3}\.[A-Za-z]{2,12}$"
);

const HOSTNAME: &str = concat!("^", host!(), "$");

const IPV4: &str = r"^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$";

/// IPv6 in its full eight-group form (valid, if not the shortest).
const IPV6: &str = "^(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}$";

/// One query parameter: `key=value` of unreserved characters.
macro_rules! param {
    () => {
        "[A-Za-z0-9._~-]{1,24}=[A-Za-z0-9._~-]{0,24}"
    };
}

/// An absolute http(s) URI: host, optional port below 10000, a short
/// path and up to five query parameters of unreserved characters.
const URI: &str = concat!(
    "^https?://",
    host!(),
    r"(?::[1-9][0-9]{0,3})?(?:/[A-Za-z0-9._~-]{0,24}){0,6}(?:\?",
    param!(),
    "(?:&",
    param!(),
    "){0,4})?$"
);

const JSON_POINTER: &str = "^(?:/(?:[A-Za-z0-9._-]|~[01]){0,24}){0,8}$";

/// An RFC 3339 duration with one component.
const DURATION: &str = "^P(?:[0-9]{1,4}[YMWD]|T[0-9]{1,4}[HMS])$";

/// The grammar-safe pattern standing for `format`, if augur has one.
pub(super) fn pattern_for(format: &str) -> Option<&'static str> {
    Some(match format {
        "email" | "idn-email" => EMAIL,
        "hostname" | "idn-hostname" => HOSTNAME,
        "ipv4" => IPV4,
        "ipv6" => IPV6,
        "uri" | "iri" | "uri-reference" | "iri-reference" => URI,
        "json-pointer" => JSON_POINTER,
        "duration" => DURATION,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::pattern_for;

    /// Longest run of one character class the patterns admit.
    const MAX_RUN: usize = 24;
    use crate::schema::pattern::to_grammar_pattern;

    /// Strings each pattern admits; every one must be valid for the
    /// validator's own `format` check.
    const SAMPLES: &[(&str, &[&str])] = &[
        (
            "email",
            &["a@b.co", "jane.doe+x@mail-1.example.org", "A_1@x9.io"],
        ),
        (
            "hostname",
            &["localhost", "a-b.example.com", "x1.y2.z3.w4.v5"],
        ),
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
            ],
        ),
        (
            "uri",
            &[
                "http://a",
                "https://example.com:8080/a/b.c?x=1&y=2",
                "https://x.y/~z_-",
            ],
        ),
        ("uri-reference", &["https://example.com/"]),
        ("iri", &["https://example.com/a"]),
        ("json-pointer", &["", "/a", "/a~0b/~1/0"]),
        ("duration", &["P3D", "PT5M", "P2W", "P10Y", "PT1H"]),
        ("idn-email", &["a@b.co"]),
        ("idn-hostname", &["example.com"]),
    ];

    /// Strings each pattern refuses.
    const REFUSED: &[(&str, &[&str])] = &[
        (
            "email",
            &["<email>", "a@b", "@b.co", "a..b@c.co", "a@-b.co"],
        ),
        (
            "hostname",
            &["-a", "a-", "a..b", "<host>", "ab--cd", "a--b"],
        ),
        ("ipv4", &["256.1.1.1", "1.2.3", "01.2.3.4"]),
        ("ipv6", &["::1", "g::1"]),
        (
            "uri",
            &["example.com", "ftp://x", "https://", "https://a/?q"],
        ),
        ("duration", &["P", "PT", "3D"]),
    ];

    /// The pattern as the validator runs it (ECMA-262 semantics).
    fn regex(format: &str) -> jsonschema::Validator {
        let p = pattern_for(format).unwrap();
        crate::validate::options()
            .build(&json!({"type": "string", "pattern": p}))
            .unwrap()
    }

    #[test]
    fn samples_match_their_pattern_and_the_validators_format() {
        for (format, samples) in SAMPLES {
            let re = regex(format);
            let schema = json!({"type": "string", "format": format});
            let v = crate::validate::options().build(&schema).unwrap();
            for s in *samples {
                assert!(re.is_valid(&json!(s)), "{format}: pattern refuses {s:?}");
                assert!(v.is_valid(&json!(s)), "{format}: validator refuses {s:?}");
            }
        }
    }

    #[test]
    fn non_values_are_refused() {
        for (format, bad) in REFUSED {
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
        vec![
            ("email", format!("a@{}.co", r("0"))),
            ("hostname", r("a")),
            ("uri", format!("http://{}", r("a"))),
            ("uri", format!("http://a/{}", r("0"))),
            ("uri", format!("http://a/?{}=1", r("q"))),
            ("uri", format!("http://a/?q={}", r("0"))),
            ("json-pointer", format!("/{}", r("a"))),
        ]
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

    /// The longest strings the patterns admit, or nearly: each must be
    /// valid for the validator too.
    #[test]
    fn the_longest_values_admitted_are_valid() {
        let r = |c: &str, n: usize| c.repeat(n);
        let label = format!("a{}", r("-b", 11)) + "c";
        let longest = [
            (
                "email",
                format!(
                    "{}.{}.{}@{label}.{label}.{label}.{label}.{}",
                    r("a", 20),
                    r("b", 20),
                    r("c", 20),
                    r("z", 12)
                ),
            ),
            ("hostname", [label.as_str(); 5].join(".")),
            (
                "uri",
                format!(
                    "https://{label}:9999/{}?{}={}",
                    vec![r("p", 24); 6].join("/"),
                    r("k", 24),
                    r("v", 24)
                ),
            ),
        ];
        for (format, s) in longest {
            assert!(
                regex(format).is_valid(&json!(s)),
                "{format}: pattern refuses {s:?}"
            );
            let v = crate::validate::options()
                .build(&json!({"type": "string", "format": format}))
                .unwrap();
            assert!(v.is_valid(&json!(s)), "{format}: validator refuses {s:?}");
        }
        let too_long = format!("{}.{}.{}.d@b.co", r("a", 20), r("b", 20), r("c", 20));
        assert!(!regex("email").is_valid(&json!(too_long)));
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
}
