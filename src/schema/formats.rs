//! String `format`s the grammar converter has no rule for, as patterns it
//! can enforce.
//!
//! llama.cpp's converter writes grammars for `date`, `time`, `date-time`
//! and the `uuid` family itself; any other `format` it drops, so the model
//! is free to write a non-address where the validator then wants an
//! address. For the formats below, the grammar copy gets an anchored
//! pattern instead: a conservative subset of the format's language (every
//! string the pattern admits is valid for the validator), written in the
//! subset [`super::pattern::to_grammar_pattern`] keeps. Validation still
//! checks the client's `format` itself.
//!
//! A pattern stands for a format only if it admits every valid example of
//! the official JSON-Schema test suite for that format (draft2020-12
//! `optional/format/*.json`, copied into the unit tests): a grammar that
//! refuses a valid value makes the model write another one than it was
//! asked for. Narrowed are:
//! - `ipv4`;
//! - `ipv6`: eight groups, or six and an IPv4 address, or `::` with at
//!   most three groups before it and four after (two and an IPv4
//!   address); lower-case hex;
//! - `uri`, `uri-reference`, `iri`, `iri-reference`: RFC 3986 syntax with
//!   any scheme (`mailto:`, `urn:`, `tel:`…); an authority of userinfo,
//!   host (a registered name, or an IPv6 or IPvFuture literal) and a port
//!   below 10000, where a host is required but in references; paths,
//!   queries and fragments of every `pchar`, `/` and `?`. The IRI forms
//!   add the `ucschar` of the BMP and planes 1 and 2 (but for spaces and
//!   invisible formatting characters), and `iprivate` in queries.
//!
//! No repetition in them admits more than 24 characters. Ollama
//! ends an answer, unfinished, once the model has written the same token
//! more than 30 times in a row, and small models fall into such runs
//! inside strings (Gemma writes digits one token each:
//! `"10000000000000000000000000000000.000…`). With every run bounded
//! below that cut, the grammar makes the model write a separator (`.`,
//! `@`, `/`) first, and the answer completes. In a URI a run is of
//! letters, digits, `-`, `_` and `~` (in a userinfo also of sub-delims);
//! every other character (`.`, `:`, `/`, `%XX`, `&`, `=`…, and in an IRI
//! each non-ASCII character) is a mark, and one component (userinfo,
//! host, path, query or fragment) holds at most 12 marks, so that marks
//! do not run on either. So bounded, a URI pattern compiles to at most
//! 0.6 MB of automaton, under a third of the validator's regex size limit
//! (augur compiles the grammar copy of tool parameters); with non-ASCII
//! characters in runs an IRI pattern would take 3.5 MB, past the limit.
//!
//! Not narrowed, since the suite has valid values no such pattern admits:
//! - `hostname`, `idn-hostname`: a label of 63 characters, far past the
//!   run bound;
//! - `email`, `idn-email`: quoted local parts (`"joe bloggs"@…`); for IDN
//!   also a local part of 64 characters, C1 controls, noncharacters;
//! - `json-pointer`: `"`, `\` and control characters;
//! - `duration`: a component of 79 digits.
//!
//! No pattern may admit a `"`, a `\` or a control character: the
//! converter writes pattern characters verbatim between the string's
//! quotes, so the grammar would let the model end the JSON string there
//! (or start an escape), while JSON holds such a character escaped, which
//! a pattern, matched against the decoded string, cannot spell.

/// Which patterns stand, in the grammar copy, for the string formats the
/// converter drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatForms {
    /// Patterns admitting every valid value of the format's test suite
    /// (see `formats`); `email` and `hostname` are left free.
    #[default]
    Exact,
    /// The common forms (`tools.small_model`): `email`, `hostname` and
    /// `uri` narrowed as `formats_common` says, the rest as [`Self::Exact`].
    Common,
}

/// One IPv4 `dec-octet`: no leading zeros, at most 255.
macro_rules! octet {
    () => {
        "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
    };
}

/// An IPv4 address in dotted-decimal form.
macro_rules! ipv4 {
    () => {
        concat!("(?:", octet!(), r"\.){3}", octet!())
    };
}

/// One 16-bit group of an IPv6 address.
macro_rules! h16 {
    () => {
        "[0-9a-f]{1,4}"
    };
}

/// An IPv6 address: eight groups, or six and an IPv4 address; or at most
/// three groups, `::` and at most four groups (two and an IPv4 address),
/// which leaves `::` at least one group to stand for.
macro_rules! ipv6 {
    () => {
        concat!(
            "(?:(?:(?:",
            h16!(),
            ":){6}|(?:",
            h16!(),
            "(?::",
            h16!(),
            "){0,2})?::(?:",
            h16!(),
            ":){0,2})(?:",
            h16!(),
            ":",
            h16!(),
            "|",
            ipv4!(),
            ")|(?:",
            h16!(),
            "(?::",
            h16!(),
            "){0,2})?::(?:",
            h16!(),
            "(?::",
            h16!(),
            ")?)?)"
        )
    };
}

const IPV4: &str = concat!("^", ipv4!(), "$");

const IPV6: &str = concat!("^", ipv6!(), "$");

/// One character of a run in a URI or IRI: `unreserved` but `.`.
macro_rules! run {
    () => {
        "[A-Za-z0-9_~-]"
    };
}

/// `ucschar` of the BMP and planes 1 and 2, the characters an IRI adds,
/// but for the no-break space, the spaces, separators and invisible
/// formatting characters (bidi overrides…) of U+2000–U+206F, and U+FEFF.
macro_rules! ucschar {
    () => {
        "[\u{A1}-\u{1FFF}\u{2070}-\u{D7FF}\u{F900}-\u{FDCF}\u{FDF0}-\u{FEFE}\u{FF00}-\u{FFEF}\u{10000}-\u{1FFFD}\u{20000}-\u{2FFFD}]"
    };
}

/// [`ucschar`] and `iprivate`, the characters an IRI query adds.
macro_rules! ucschar_iprivate {
    () => {
        "[\u{A1}-\u{1FFF}\u{2070}-\u{D7FF}\u{E000}-\u{F8FF}\u{F900}-\u{FDCF}\u{FDF0}-\u{FEFE}\u{FF00}-\u{FFEF}\u{10000}-\u{1FFFD}\u{20000}-\u{2FFFD}\u{F0000}-\u{FFFFD}\u{100000}-\u{10FFFD}]"
    };
}

/// A mark: one character of `$class`, a `pct-encoded` octet or one of
/// the alternatives `$more` (`|…`).
macro_rules! mark {
    ($class:expr, $more:expr) => {
        concat!("(?:", $class, "|%[0-9A-Fa-f]{2}", $more, ")")
    };
}

/// Runs of at most 24 characters between at most 12 marks `$mark`.
macro_rules! text {
    ($mark:expr) => {
        concat!(run!(), "{0,24}(?:", $mark, run!(), "{0,24}){0,12}")
    };
}

/// [`text`] that is not empty and starts with a run or a mark `$first`.
macro_rules! text_from {
    ($first:expr, $mark:expr) => {
        concat!(
            "(?:",
            run!(),
            "{1,24}|",
            $first,
            run!(),
            "{0,24})(?:",
            $mark,
            run!(),
            "{0,24}){0,11}"
        )
    };
}

/// Marks of a path: the rest of `pchar`, `/`, and `$more`.
macro_rules! path_mark {
    ($more:expr) => {
        mark!("[!$&'()*+,;=.:@/]", $more)
    };
}

/// A registered name of a URI: up to six dotted runs.
macro_rules! uri_host {
    () => {
        concat!(run!(), r"{1,24}(?:\.", run!(), "{1,24}){0,5}")
    };
}

/// A registered name of an IRI: runs between dots and `ucschar`.
macro_rules! iri_host {
    () => {
        text_from!(ucschar!(), mark!(r"\.", concat!("|", ucschar!())))
    };
}

/// `authority`: an optional userinfo (its runs may hold sub-delims), a
/// host (an IPv6 or IPvFuture literal, or the registered name `$host`)
/// and a port below 10000.
macro_rules! authority {
    ($more:expr, $host:expr) => {
        concat!(
            "(?:[A-Za-z0-9_~!$&'()*+,;=-]{0,24}(?:",
            mark!("[.:]", $more),
            "[A-Za-z0-9_~!$&'()*+,;=-]{0,24}){0,12}@)?(?:\\[(?:",
            ipv6!(),
            r"|[Vv][0-9A-Fa-f]{1,4}\.[A-Za-z0-9._~!$&'()*+,;=:-]{1,24})\]|",
            $host,
            ")(?::[1-9][0-9]{0,3})?"
        )
    };
}

/// `scheme`.
macro_rules! scheme {
    () => {
        "[A-Za-z][A-Za-z0-9+.-]{0,15}"
    };
}

/// A path that does not start with `/`, whose first segment may hold `:`.
macro_rules! rootless {
    ($more:expr) => {
        text_from!(mark!("[!$&'()*+,;=.:@]", $more), path_mark!($more))
    };
}

/// `scheme ":" hier-part`: an authority and an absolute path, or a path
/// not starting with `//` (absolute, rootless or empty).
macro_rules! absolute {
    ($more:expr, $host:expr) => {
        concat!(
            scheme!(),
            ":(?://",
            authority!($more, $host),
            "(?:/",
            text!(path_mark!($more)),
            ")?|/?(?:",
            rootless!($more),
            ")?)"
        )
    };
}

/// A URI or a relative reference, before the query: `//` and an optional
/// authority, or a path whose first segment holds no `:`, either with an
/// optional path; or a path after a scheme or `/`; or nothing.
macro_rules! reference {
    ($more:expr, $host:expr) => {
        concat!(
            "(?:(?:(?:",
            scheme!(),
            ":)?//(?:",
            authority!($more, $host),
            ")?|/?",
            text_from!(
                mark!("[!$&'()*+,;=.@]", $more),
                mark!("[!$&'()*+,;=.@]", $more)
            ),
            ")(?:/",
            text!(path_mark!($more)),
            ")?|(?:",
            scheme!(),
            ":/?|/)(?:",
            rootless!($more),
            ")?)?"
        )
    };
}

/// An optional query and fragment; `$query` marks what a query adds.
macro_rules! query_fragment {
    ($more:expr, $query:expr) => {
        concat!(
            r"(?:\?",
            text!(mark!("[!$&'()*+,;=.:@/?]", $query)),
            ")?(?:#",
            text!(mark!("[!$&'()*+,;=.:@/?]", $more)),
            ")?"
        )
    };
}

const URI: &str = concat!(
    "^",
    absolute!("", uri_host!()),
    query_fragment!("", ""),
    "$"
);

const URI_REFERENCE: &str = concat!(
    "^",
    reference!("", uri_host!()),
    query_fragment!("", ""),
    "$"
);

const IRI: &str = concat!(
    "^",
    absolute!(concat!("|", ucschar!()), iri_host!()),
    query_fragment!(concat!("|", ucschar!()), concat!("|", ucschar_iprivate!())),
    "$"
);

const IRI_REFERENCE: &str = concat!(
    "^",
    reference!(concat!("|", ucschar!()), iri_host!()),
    query_fragment!(concat!("|", ucschar!()), concat!("|", ucschar_iprivate!())),
    "$"
);

/// The grammar-safe pattern standing for `format`, if augur has one.
pub(super) fn pattern_for(format: &str) -> Option<&'static str> {
    Some(match format {
        "ipv4" => IPV4,
        "ipv6" => IPV6,
        "uri" => URI,
        "uri-reference" => URI_REFERENCE,
        "iri" => IRI,
        "iri-reference" => IRI_REFERENCE,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;
