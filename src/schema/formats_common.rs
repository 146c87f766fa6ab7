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
#[path = "formats_common_tests.rs"]
mod tests;
