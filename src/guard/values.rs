//! One rule's checks on the values its pointer finds in a call's
//! arguments, within bounds: past [`MAX_MATCHES`] values, or on a URL
//! its readers disagree on, the guard cannot tell, and says so.

use serde_json::Value;

use super::{
    paths::{normal_path, under},
    rules::{Check, Rule, UrlRule},
    ssrf::{Inside, MAX_URL, Reach, classify_url},
};

/// Most values one rule's pointer collects from one call.
pub(crate) const MAX_MATCHES: usize = 1024;

/// The rule of a URL its readers disagree on.
pub(crate) const AMBIGUOUS_URL: &str = "ambiguous_url";
/// The rule of arguments the guard cannot read within its bounds.
pub(crate) const UNREADABLE_ARGUMENTS: &str = "unreadable_arguments";

/// What is wrong with a call's values under one rule.
#[derive(Debug, PartialEq)]
pub(super) enum Fault {
    /// A value breaks the rule: why.
    Breaks(String),
    /// The guard cannot tell whether the rule holds: the call is refused
    /// under `rule` ([`AMBIGUOUS_URL`], [`UNREADABLE_ARGUMENTS`]),
    /// whatever the rule's action.
    Unjudged { rule: &'static str, why: String },
}

/// The values at `pointer` under `arguments` with where each was found,
/// and whether there were more than [`MAX_MATCHES`].
pub(super) fn found<'a>(
    arguments: &'a Value,
    pointer: &[String],
) -> (Vec<(String, &'a Value)>, bool) {
    let mut values = Vec::new();
    let mut more = false;
    collect(arguments, pointer, "", &mut values, &mut more);
    (values, more)
}

/// What `rule` finds wrong with `arguments`: the first value that breaks
/// it or cannot be judged, and values past the bound, each with where.
pub(super) fn faults(rule: &Rule, arguments: &Value) -> Vec<(String, Fault)> {
    let (values, more) = found(arguments, &rule.pointer);
    let mut out = Vec::new();
    if more {
        out.push((
            pointer_text(&rule.pointer),
            Fault::Unjudged {
                rule: UNREADABLE_ARGUMENTS,
                why: format!("holds more than {MAX_MATCHES} values to check"),
            },
        ));
    }
    let first = values.into_iter().find_map(|(at, value)| {
        let fault = rule.checks.iter().find_map(|c| fails(c, value))?;
        Some((if at.is_empty() { "/".into() } else { at }, fault))
    });
    out.extend(first);
    out
}

/// A rule's pointer as written (`/items/*/url`).
fn pointer_text(pointer: &[String]) -> String {
    if pointer.is_empty() {
        return "/".into();
    }
    pointer.iter().map(|s| format!("/{}", escape(s))).collect()
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The values at `pointer` (with `*` segments) under `v`, with where each
/// was found; `more` when there were more than [`MAX_MATCHES`].
fn collect<'a>(
    v: &'a Value,
    pointer: &[String],
    at: &str,
    out: &mut Vec<(String, &'a Value)>,
    more: &mut bool,
) {
    if *more {
        return;
    }
    let Some((seg, rest)) = pointer.split_first() else {
        if out.len() >= MAX_MATCHES {
            *more = true;
        } else {
            out.push((at.to_string(), v));
        }
        return;
    };
    match v {
        Value::Object(m) if seg == "*" => {
            for (k, x) in m {
                collect(x, rest, &format!("{at}/{}", escape(k)), out, more);
            }
        }
        // Go's and .NET's readers match keys without regard to case: a
        // `URL` beside `url` may be the one the client reads.
        Value::Object(m) => {
            for (k, x) in m.iter().filter(|(k, _)| same_key(k, seg)) {
                collect(x, rest, &format!("{at}/{}", escape(k)), out, more);
            }
        }
        Value::Array(a) if seg == "*" => {
            for (i, x) in a.iter().enumerate() {
                collect(x, rest, &format!("{at}/{i}"), out, more);
            }
        }
        Value::Array(a) => {
            if let Some(x) = seg.parse::<usize>().ok().and_then(|i| a.get(i)) {
                collect(x, rest, &format!("{at}/{seg}"), out, more);
            }
        }
        _ => {}
    }
}

/// Whether key `k` is `seg` to a reader that matches keys as Go's
/// `encoding/json` does (Unicode simple case folding: `URL`, `Url` and
/// `\u{212a}ey` are `url` and `key`).
fn same_key(k: &str, seg: &str) -> bool {
    fn fold(c: char) -> char {
        match c {
            '\u{212a}' => 'k',
            '\u{17f}' => 's',
            '\u{3c2}' => '\u{3c3}',
            c => {
                let mut lower = c.to_lowercase();
                match (lower.next(), lower.next()) {
                    (Some(l), None) => l,
                    _ => c,
                }
            }
        }
    }
    k == seg
        || (k.chars().count() == seg.chars().count()
            && k.chars().map(fold).eq(seg.chars().map(fold)))
}

/// What is wrong with `value` under `check`, if anything.
fn fails(check: &Check, value: &Value) -> Option<Fault> {
    let text = value.as_str();
    let breaks = match check {
        Check::Enum(allowed) => {
            (!allowed.contains(value)).then(|| "is not one of the allowed values".into())
        }
        Check::Pattern(re) => match text {
            Some(s) if re.is_match(s) => None,
            _ => Some(format!("does not match {}", re.as_str())),
        },
        Check::Minimum(n) => match value.as_f64() {
            Some(x) if x >= *n => None,
            _ => Some(format!("must be a number of at least {n}")),
        },
        Check::Maximum(n) => match value.as_f64() {
            Some(x) if x <= *n => None,
            _ => Some(format!("must be a number of at most {n}")),
        },
        Check::MaxLength(n) => match text {
            Some(s) if s.chars().count() <= *n => None,
            Some(_) => Some(format!("is longer than {n} characters")),
            None => Some("must be a string".into()),
        },
        Check::PathPrefix(prefixes) => match text.and_then(normal_path) {
            Some(p) if prefixes.iter().any(|pre| under(&p, pre)) => None,
            _ => Some(format!("is not a path under {}", prefixes.join(", "))),
        },
        Check::Url(rule) => match text {
            Some(s) => return url_fails(rule, s),
            None => Some("must be a URL".into()),
        },
    };
    breaks.map(Fault::Breaks)
}

fn url_fails(rule: &UrlRule, text: &str) -> Option<Fault> {
    if text.len() > MAX_URL {
        return Some(Fault::Unjudged {
            rule: UNREADABLE_ARGUMENTS,
            why: format!("is a URL longer than {MAX_URL} bytes"),
        });
    }
    let reach = classify_url(text);
    if reach == Reach::Inside(Inside::Ambiguous) {
        let why = super::readers::ambiguity(text).unwrap_or("an escaped host");
        return Some(Fault::Unjudged {
            rule: AMBIGUOUS_URL,
            why: format!("is a URL its readers disagree on ({why})"),
        });
    }
    let breaks = |why: String| Some(Fault::Breaks(why));
    if rule.block_private
        && let Reach::Inside(why) = reach
    {
        return breaks(format!("is a URL inside the network ({})", why.as_str()));
    }
    let url = url::Url::parse(text).ok();
    if let Some(schemes) = &rule.schemes {
        let scheme = url
            .as_ref()
            .map(|u| u.scheme().to_string())
            .unwrap_or_default();
        if !schemes.contains(&scheme) {
            return breaks(format!("is not a URL of scheme {}", schemes.join(", ")));
        }
    }
    if let Some(hosts) = &rule.hosts {
        let host = match &reach {
            Reach::Name(n) => n.clone(),
            Reach::Public(ip) => ip.to_string(),
            Reach::Inside(_) => url
                .as_ref()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_default(),
        };
        if !hosts.is_match(&host) {
            return breaks("is a URL of a host the policy does not allow".into());
        }
    }
    None
}
