//! Judging one tool call against a [`Guard`]: its name, then each rule
//! whose tool and pointer match.

use serde_json::Value;

use super::rules::{Action, Check, Guard, Risk, Rule, UrlRule};
use super::ssrf::{Reach, classify_url};

/// Most names resolved for one call.
pub(crate) const MAX_RESOLVED: usize = 8;

/// Most values one rule's pointer collects from one call.
const MAX_MATCHES: usize = 1024;

/// One rule a call broke.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The rule's id (`allow`, `deny` for the name lists).
    pub rule: String,
    pub action: Action,
    /// What is wrong, for the model's feedback and the log (never the
    /// argument's value itself).
    pub why: String,
}

/// What the guard makes of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// The tool's risk level, if the policy gives one.
    pub risk: Option<Risk>,
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Whether the call is withheld.
    pub fn blocked(&self) -> bool {
        self.findings.iter().any(|f| f.action == Action::Block)
    }

    /// Whether the call goes out marked.
    pub fn flagged(&self) -> bool {
        !self.blocked() && self.findings.iter().any(|f| f.action == Action::Flag)
    }
}

impl Guard {
    /// Whether a tool of this name may be handed to the caller at all.
    pub fn offers(&self, name: &str) -> bool {
        self.deny.as_ref().is_none_or(|d| !d.is_match(name))
            && self.allow.as_ref().is_none_or(|a| a.is_match(name))
    }

    /// [`Guard::judge`], and then, for `url` rules that ask for it, the
    /// names in the call's URLs resolved (at most [`MAX_RESOLVED`] per
    /// call, each within the rule's time): a name that resolves inside
    /// the network, or does not resolve in time, breaks the rule.
    pub async fn judge_resolving(&self, name: &str, arguments: &Value) -> Verdict {
        let mut verdict = self.judge(name, arguments);
        let mut resolved = 0;
        for rule in &self.rules {
            if rule.tool.as_ref().is_some_and(|t| !t.is_match(name))
                || verdict.findings.iter().any(|f| f.rule == rule.id)
            {
                continue;
            }
            let Some(timeout) = rule.checks.iter().find_map(|c| match c {
                Check::Url(u) => u.resolve,
                _ => None,
            }) else {
                continue;
            };
            let mut values = Vec::new();
            collect(arguments, &rule.pointer, "", &mut values);
            for (at, value) in values {
                let Some(Reach::Name(host)) = value.as_str().map(classify_url) else {
                    continue;
                };
                resolved += 1;
                let why = if resolved > MAX_RESOLVED {
                    Some(format!("holds more than {MAX_RESOLVED} names to resolve"))
                } else {
                    match super::ssrf::resolve(&host, timeout).await {
                        Reach::Inside(why) => Some(format!(
                            "is a URL whose host resolves inside the network ({})",
                            why.as_str()
                        )),
                        _ => None,
                    }
                };
                if let Some(why) = why {
                    let at = if at.is_empty() { "/".to_string() } else { at };
                    verdict.findings.push(Finding {
                        rule: rule.id.clone(),
                        action: rule.action,
                        why: format!("`{name}` argument {at}: {why}"),
                    });
                    break;
                }
            }
        }
        verdict
    }

    /// Write the `enum` rules for tool `name` into its parameters schema,
    /// so that a grammar built from it offers the model only the allowed
    /// values; whether anything changed. A pointer is followed through
    /// `properties` (and `items` or `additionalProperties` for `*`); one
    /// that leads nowhere in the schema changes nothing.
    pub fn narrow_parameters(&self, name: &str, parameters: &mut Value) -> bool {
        let mut changed = false;
        for rule in &self.rules {
            if rule.tool.as_ref().is_some_and(|t| !t.is_match(name)) {
                continue;
            }
            let Some(allowed) = rule.checks.iter().find_map(|c| match c {
                Check::Enum(v) => Some(v),
                _ => None,
            }) else {
                continue;
            };
            if let Some(Value::Object(schema)) = schema_at(parameters, &rule.pointer) {
                schema.insert("enum".into(), Value::Array(allowed.clone()));
                changed = true;
            }
        }
        changed
    }

    /// Whether the guard holds anything to check.
    pub fn is_empty(&self) -> bool {
        self.allow.is_none() && self.deny.is_none() && self.risk.is_empty() && self.rules.is_empty()
    }

    /// Judge a call of tool `name` with `arguments`.
    pub fn judge(&self, name: &str, arguments: &Value) -> Verdict {
        let risk = self
            .risk
            .iter()
            .filter(|(g, _)| g.is_match(name))
            .map(|(_, r)| *r)
            .max();
        let mut findings = Vec::new();
        if !self.offers(name) {
            let rule = if self.deny.as_ref().is_some_and(|d| d.is_match(name)) {
                "deny"
            } else {
                "allow"
            };
            findings.push(Finding {
                rule: rule.into(),
                action: Action::Block,
                why: format!("the tool `{name}` may not be called"),
            });
        }
        for rule in &self.rules {
            if rule.tool.as_ref().is_some_and(|t| !t.is_match(name)) {
                continue;
            }
            if let Some(why) = broken(rule, arguments) {
                findings.push(Finding {
                    rule: rule.id.clone(),
                    action: rule.action,
                    why: format!("`{name}` {why}"),
                });
            }
        }
        Verdict { risk, findings }
    }
}

/// The sub-schema of `schema` that describes the value at `pointer`.
fn schema_at<'a>(schema: &'a mut Value, pointer: &[String]) -> Option<&'a mut Value> {
    let Some((seg, rest)) = pointer.split_first() else {
        return Some(schema);
    };
    let next = if seg == "*" {
        let key = if schema.get("items").is_some_and(Value::is_object) {
            "items"
        } else {
            "additionalProperties"
        };
        schema.get_mut(key).filter(|v| v.is_object())?
    } else {
        schema.get_mut("properties")?.get_mut(seg.as_str())?
    };
    schema_at(next, rest)
}

/// What `rule` finds wrong with `arguments`, if anything.
fn broken(rule: &Rule, arguments: &Value) -> Option<String> {
    let mut values = Vec::new();
    collect(arguments, &rule.pointer, "", &mut values);
    for (at, value) in values {
        for check in &rule.checks {
            if let Some(why) = fails(check, value) {
                let at = if at.is_empty() { "/".to_string() } else { at };
                return Some(format!("argument {at}: {why}"));
            }
        }
    }
    None
}

/// The values at `pointer` (with `*` segments) under `v`, with where
/// each was found.
fn collect<'a>(v: &'a Value, pointer: &[String], at: &str, out: &mut Vec<(String, &'a Value)>) {
    if out.len() >= MAX_MATCHES {
        return;
    }
    let Some((seg, rest)) = pointer.split_first() else {
        out.push((at.to_string(), v));
        return;
    };
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    match v {
        Value::Object(m) if seg == "*" => {
            for (k, x) in m {
                collect(x, rest, &format!("{at}/{}", escape(k)), out);
            }
        }
        Value::Object(m) => {
            if let Some(x) = m.get(seg) {
                collect(x, rest, &format!("{at}/{}", escape(seg)), out);
            }
        }
        Value::Array(a) if seg == "*" => {
            for (i, x) in a.iter().enumerate() {
                collect(x, rest, &format!("{at}/{i}"), out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = seg.parse::<usize>().ok().and_then(|i| a.get(i)) {
                collect(x, rest, &format!("{at}/{seg}"), out);
            }
        }
        _ => {}
    }
}

/// Why `value` fails `check`, if it does.
fn fails(check: &Check, value: &Value) -> Option<String> {
    let text = value.as_str();
    match check {
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
            Some(s) => url_fails(rule, s),
            None => Some("must be a URL".into()),
        },
    }
}

/// Whether normalized path `p` is `prefix` or under it.
fn under(p: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || p == prefix || p.starts_with(&format!("{prefix}/"))
}

/// An absolute path with percent-escapes decoded, `\` read as `/`, empty
/// and `.` segments dropped and `..` applied; `None` when it is not
/// absolute, climbs above the root, or holds a NUL.
fn normal_path(text: &str) -> Option<String> {
    let decoded = percent_decode(text)?;
    let slashed = decoded.replace('\\', "/");
    if !slashed.starts_with('/') || slashed.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in slashed.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// `text` with `%XX` decoded, repeatedly (a double-encoded `%252e` is a
/// `.` to a server that decodes twice); `None` for invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let mut s = text.to_string();
    for _ in 0..4 {
        if !s.contains('%') {
            break;
        }
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if b[i] == b'%'
                && let (Some(h), Some(l)) = (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                )
            {
                out.push((h * 16 + l) as u8);
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        let next = String::from_utf8(out).ok()?;
        if next == s {
            break;
        }
        s = next;
    }
    Some(s)
}

fn url_fails(rule: &UrlRule, text: &str) -> Option<String> {
    let reach = classify_url(text);
    if rule.block_private
        && let Reach::Inside(why) = reach
    {
        return Some(format!("is a URL inside the network ({})", why.as_str()));
    }
    let url = url::Url::parse(text).ok();
    if let Some(schemes) = &rule.schemes {
        let scheme = url
            .as_ref()
            .map(|u| u.scheme().to_string())
            .unwrap_or_default();
        if !schemes.contains(&scheme) {
            return Some(format!("is not a URL of scheme {}", schemes.join(", ")));
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
            return Some("is a URL of a host the policy does not allow".into());
        }
    }
    None
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
