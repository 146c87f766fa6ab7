//! The common forms of string `format`s, as patterns for the grammar copy
//! of a model that needs them: the narrowing `tools.small_model` adds.
//!
//! [`super::formats`] narrows a format only with a pattern that admits
//! every valid example of the JSON-Schema test suite, so it leaves
//! `email` and `hostname` free and admits any URI scheme. A very small
//! model, left free, writes a name where an address is wanted
//! (`"Alice"`), or runs a URI on until its token bound. For such a model
//! an operator turns on `tools.small_model`, and the grammar copy then
//! takes the form these formats are almost always given in:
//! - `email`, `idn-email`: a dot-atom local part of up to three parts and
//!   a domain of up to four labels under an alphabetic top-level label
//!   (no quoted local part, no address literal);
//! - `hostname`, `idn-hostname`: one to five ASCII labels of at most 24
//!   characters;
//! - `uri`, `iri`: an `http` or `https` URL with a host, a port below
//!   10000, a short path and up to five query parameters.
//!
//! Every string these patterns admit is valid for its format, so
//! validation (against the client's own `format`) never refuses what the
//! grammar let through; a value outside them (`mailto:`, a quoted local
//! part) is valid too, but the model is not offered it. The same bound on
//! runs holds as in [`super::formats`]: no repetition admits more than 24
//! characters.

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

/// One query parameter: `key=value` of unreserved characters.
macro_rules! param {
    () => {
        "[A-Za-z0-9._~-]{1,24}=[A-Za-z0-9._~-]{0,24}"
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

/// An absolute http(s) URL: host, optional port below 10000, a short
/// path and up to five query parameters of unreserved characters.
const URL: &str = concat!(
    "^https?://",
    host!(),
    r"(?::[1-9][0-9]{0,3})?(?:/[A-Za-z0-9._~-]{0,24}){0,6}(?:\?",
    param!(),
    "(?:&",
    param!(),
    "){0,4})?$"
);

/// The common-form pattern for `format`, if it has one here.
pub(super) fn pattern_for(format: &str) -> Option<&'static str> {
    Some(match format {
        "email" | "idn-email" => EMAIL,
        "hostname" | "idn-hostname" => HOSTNAME,
        "uri" | "iri" => URL,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
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
}
