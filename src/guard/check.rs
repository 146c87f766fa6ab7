//! Judging one tool call against a [`Guard`]: its name, then each rule
//! whose tool and pointer match.

use serde_json::Value;

use super::{
    arguments::Arguments,
    rules::{Action, Check, Guard, Risk, Rule},
    ssrf::{Reach, classify_url},
    values::{Fault, UNREADABLE_ARGUMENTS, faults, found},
};

/// Most names resolved for one call.
pub(crate) const MAX_RESOLVED: usize = 8;

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

    /// [`Guard::judge`] of the arguments as the client will read them
    /// (see [`super::arguments`]), and then, for `url` rules that ask for
    /// it, the names in the call's URLs resolved (at most
    /// [`MAX_RESOLVED`] per call, each within the rule's time): a name
    /// that resolves inside the network, or does not resolve in time,
    /// breaks the rule. Arguments no reader reads alike break
    /// [`UNREADABLE_ARGUMENTS`] when a rule would read them.
    pub async fn judge_resolving(&self, name: &str, arguments: &Arguments) -> Verdict {
        let arguments = match arguments {
            Arguments::Read(v) => v,
            Arguments::Unreadable { why, .. } => return self.judge_unreadable(name, why),
        };
        let mut verdict = self.judge(name, arguments);
        let mut names = Vec::new();
        for rule in self.rules_for(name) {
            if verdict.findings.iter().any(|f| f.rule == rule.id) {
                continue;
            }
            let Some(timeout) = rule.checks.iter().find_map(|c| match c {
                Check::Url(u) => u.resolve,
                _ => None,
            }) else {
                continue;
            };
            for (at, value) in found(arguments, &rule.pointer).0 {
                if let Some(Reach::Name(host)) = value.as_str().map(classify_url) {
                    let at = if at.is_empty() { "/".to_string() } else { at };
                    names.push((rule, timeout, at, host));
                }
            }
        }
        if names.len() > MAX_RESOLVED {
            verdict.findings.push(Finding {
                rule: UNREADABLE_ARGUMENTS.into(),
                action: Action::Block,
                why: format!("`{name}` holds more than {MAX_RESOLVED} names to resolve"),
            });
            return verdict;
        }
        for (rule, timeout, at, host) in names {
            if verdict.findings.iter().any(|f| f.rule == rule.id) {
                continue;
            }
            if let Reach::Inside(why) = super::ssrf::resolve(&host, timeout).await {
                verdict.findings.push(Finding {
                    rule: rule.id.clone(),
                    action: rule.action,
                    why: format!(
                        "`{name}` argument {at}: is a URL whose host resolves inside the network ({})",
                        why.as_str()
                    ),
                });
            }
        }
        verdict
    }

    /// The verdict on a call whose arguments cannot be read: its name
    /// judged, and refused if any rule would read them.
    fn judge_unreadable(&self, name: &str, why: &str) -> Verdict {
        let mut verdict = self.judge_name(name);
        if self.rules_for(name).next().is_some() {
            verdict.findings.push(Finding {
                rule: UNREADABLE_ARGUMENTS.into(),
                action: Action::Block,
                why: format!("`{name}` arguments are not JSON its readers agree on: {why}"),
            });
        }
        verdict
    }

    /// The rules that apply to tool `name`.
    fn rules_for<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules
            .iter()
            .filter(move |r| r.tool.as_ref().is_none_or(|t| t.is_match(name)))
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

    /// Judge a call of tool `name` with `arguments` (as read).
    pub fn judge(&self, name: &str, arguments: &Value) -> Verdict {
        let mut verdict = self.judge_name(name);
        for rule in self.rules_for(name) {
            for (at, fault) in faults(rule, arguments) {
                let (rule, action, why) = match fault {
                    Fault::Breaks(why) => (rule.id.clone(), rule.action, why),
                    Fault::Unjudged { rule, why } => (rule.to_string(), Action::Block, why),
                };
                verdict.findings.push(Finding {
                    rule,
                    action,
                    why: format!("`{name}` argument {at}: {why}"),
                });
            }
        }
        verdict
    }

    /// The tool's risk, and whether its name is denied or not allowed.
    fn judge_name(&self, name: &str) -> Verdict {
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

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
