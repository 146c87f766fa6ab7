//! Model names as Ollama resolves them, so that every spelling of one model
//! is one name for allow-lists, limits and policy globs.
//!
//! Ollama parses a name into host, namespace, model and tag
//! (`types/model/name.go`), fills the missing parts with
//! `registry.ollama.ai`, `library` and `latest`, strips a `:local` source
//! suffix, and finds models case-insensitively. So `gemma3`,
//! `gemma3:latest`, `library/gemma3`, `registry.ollama.ai/library/gemma3`,
//! `https://registry.ollama.ai/library/gemma3:latest`, `GEMMA3` and
//! `gemma3:local` are one model. [`normalize_model_name`] gives all of them
//! the same shortest form, lowercased: `gemma3:latest`.
//!
//! The shortest form drops the default host and namespace (as Ollama's
//! `DisplayShortest` does): `hf.co/org/m:q4_k_m` keeps its host and
//! namespace, `org/m` becomes `org/m:latest`. A cloud source suffix
//! (`:cloud`, `-cloud` on a tag) names a different model and is kept, as
//! `:cloud` after the tag.

use std::borrow::Cow;

/// Ollama's default registry host.
const DEFAULT_HOST: &str = "registry.ollama.ai";
/// Ollama's default namespace.
const DEFAULT_NAMESPACE: &str = "library";
/// Ollama's default tag.
const DEFAULT_TAG: &str = "latest";

/// Where a name says its model runs (`types/modelref`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Unspecified,
    Local,
    Cloud,
}

/// Split a `:local` / `:cloud` suffix, or a `-cloud` tag suffix, off `raw`.
fn source_suffix(raw: &str) -> (Cow<'_, str>, Source) {
    if let Some(idx) = raw.rfind(':') {
        let suffix = raw[idx + 1..].trim();
        if suffix.eq_ignore_ascii_case("cloud") {
            return (Cow::Borrowed(&raw[..idx]), Source::Cloud);
        }
        if suffix.eq_ignore_ascii_case("local") {
            return (Cow::Borrowed(&raw[..idx]), Source::Local);
        }
        let cut = suffix.len().wrapping_sub("-cloud".len());
        if !suffix.contains('/')
            && suffix
                .get(cut..)
                .is_some_and(|end| end.eq_ignore_ascii_case("-cloud"))
        {
            let tag = &suffix[..cut];
            return (Cow::Owned(format!("{}{tag}", &raw[..=idx])), Source::Cloud);
        }
    }
    (Cow::Borrowed(raw), Source::Unspecified)
}

/// The parts of a name, for [`valid`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Host,
    Namespace,
    Model,
    Tag,
}

/// Ollama's `isValidPart`: length, a letter, digit or `_` first, then
/// those or `-`, `.` (not in a namespace) and `:` (only in a host).
fn valid(part: Part, s: &str) -> bool {
    let max = if part == Part::Host { 350 } else { 80 };
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = s.as_bytes();
    (1..=max).contains(&bytes.len())
        && word(bytes[0])
        && bytes[1..].iter().all(|&b| {
            word(b)
                || b == b'-'
                || (b == b'.' && part != Part::Namespace)
                || (b == b':' && part == Part::Host)
        })
}

/// The one name augur uses for a model, however the client spelled it.
///
/// `gemma3` → `gemma3:latest`; `registry.ollama.ai/library/gemma3:4b` →
/// `gemma3:4b`; `Library/Gemma3:4B` → `gemma3:4b`; `hf.co/org/m:Q4` →
/// `hf.co/org/m:q4`; `gemma3:4b:cloud` and `gemma3:4b-cloud` →
/// `gemma3:4b:cloud`. An empty name stays empty.
pub fn normalize_model_name(name: &str) -> String {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    if let Some(short) = short_form(trimmed) {
        return short;
    }
    general_form(trimmed)
}

/// The common case without parsing: `model` or `model:tag`, already
/// lowercase, valid, and with no source suffix.
fn short_form(name: &str) -> Option<String> {
    let (model, tag) = match name.split_once(':') {
        Some((m, t)) => (m, Some(t)),
        None => (name, None),
    };
    let plain = |part: Part, s: &str| valid(part, s) && !s.bytes().any(|b| b.is_ascii_uppercase());
    if !plain(Part::Model, model) {
        return None;
    }
    match tag {
        None => {
            let mut out = String::with_capacity(name.len() + 1 + DEFAULT_TAG.len());
            out.push_str(name);
            out.push(':');
            out.push_str(DEFAULT_TAG);
            Some(out)
        }
        Some(t)
            if plain(Part::Tag, t) && t != "cloud" && t != "local" && !t.ends_with("-cloud") =>
        {
            Some(name.to_string())
        }
        Some(_) => None,
    }
}

/// Whether Ollama accepts `name` (surrounding spaces aside) as a model
/// name: every part it parses into is valid (`Name.IsValid`). A name with
/// a control character, a space, a glob or a non-ASCII letter is not.
pub(crate) fn is_valid_model_name(name: &str) -> bool {
    let trimmed = name.trim();
    !trimmed.is_empty() && (short_form(trimmed).is_some() || parse_in_full(trimmed).is_some())
}

/// [`normalize_model_name`] for a trimmed, non-empty name, in full; a name
/// Ollama refuses stays itself, lowercased.
fn general_form(trimmed: &str) -> String {
    parse_in_full(trimmed).unwrap_or_else(|| trimmed.to_lowercase())
}

/// The shortest form of a trimmed, non-empty name, or `None` when Ollama
/// refuses the name.
fn parse_in_full(trimmed: &str) -> Option<String> {
    let (base, source) = source_suffix(trimmed);
    if source != Source::Unspecified && source_suffix(&base).1 != Source::Unspecified {
        // Two source suffixes: Ollama refuses the name.
        return None;
    }
    let mut rest = &*base;
    // "/" cannot appear in a tag, so a ":" after the last "/" starts one.
    // A part that is there but empty (`/x`, `x:`) is one Ollama refuses.
    let mut tag = None;
    if let Some(colon) = rest.rfind(':')
        && rest.rfind('/').is_none_or(|slash| colon > slash)
    {
        tag = Some(rest[colon + 1..].trim());
        rest = &rest[..colon];
    }
    let mut parts = rest.rsplitn(3, '/');
    let model = parts.next().unwrap_or_default().trim();
    let namespace = parts.next().map(str::trim).unwrap_or(DEFAULT_NAMESPACE);
    let host = match parts.next() {
        Some(h) => h.split_once("://").map_or(h, |(_scheme, host)| host).trim(),
        None => DEFAULT_HOST,
    };
    let tag = tag.unwrap_or(DEFAULT_TAG);
    if !(valid(Part::Host, host)
        && valid(Part::Namespace, namespace)
        && valid(Part::Model, model)
        && valid(Part::Tag, tag))
    {
        return None;
    }
    let mut out = String::with_capacity(trimmed.len() + 8);
    if !host.eq_ignore_ascii_case(DEFAULT_HOST) {
        out.push_str(host);
        out.push('/');
        out.push_str(namespace);
        out.push('/');
    } else if !namespace.eq_ignore_ascii_case(DEFAULT_NAMESPACE) {
        out.push_str(namespace);
        out.push('/');
    }
    out.push_str(model);
    out.push(':');
    out.push_str(tag);
    if source == Source::Cloud {
        out.push_str(":cloud");
    }
    out.make_ascii_lowercase();
    // Non-ASCII letters fold too: Ollama compares names with EqualFold.
    if !out.is_ascii() {
        out = out.to_lowercase();
    }
    Some(out)
}

#[cfg(test)]
#[path = "model_name_tests.rs"]
mod tests;
