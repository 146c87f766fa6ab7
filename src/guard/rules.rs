//! `tools.guard`: which tools a caller may be handed and what their
//! arguments may hold, as written in a policy file and compiled.
//!
//! ```yaml
//! tools:
//!   guard:
//!     deny: ["shell_*"]                 # never returned (globs)
//!     allow: ["get_*", "fetch_url"]     # if set: only these
//!     risk: {npc_give_item: high}       # low | medium | high
//!     rules:
//!       - id: no-internal-fetch
//!         tool: "fetch_*"               # default: every tool
//!         pointer: /url                 # `*` matches any key or index
//!         url: {schemes: [https], hosts: ["*.example.com"], block_private: true}
//!         action: block                 # block (default) | flag | log
//!       - pointer: /items/*/qty
//!         minimum: 1
//!         maximum: 10
//! ```

use globset::{Glob, GlobMatcher, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::Value;

/// Most rules in one guard.
pub(crate) const MAX_RULES: usize = 256;
/// Most segments of a rule's pointer.
pub(crate) const MAX_POINTER: usize = 32;

/// The compiled `tools.guard` of a model.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    pub(super) allow: Option<GlobSet>,
    pub(super) deny: Option<GlobSet>,
    pub(super) risk: Vec<(GlobMatcher, Risk)>,
    pub(super) rules: Vec<Rule>,
    /// The block as written, for equality (compiled globs and patterns
    /// have none).
    written: String,
}

impl PartialEq for Guard {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}

/// How much harm a tool's effect can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// What a rule's violation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The call is withheld.
    Block,
    /// The call is returned, marked.
    Flag,
    /// The call is returned; the violation is logged and counted.
    Log,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Block => "block",
            Action::Flag => "flag",
            Action::Log => "log",
        }
    }
}

impl Guard {
    /// What `/-/policies` shows of it.
    pub fn summary(&self) -> Value {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|r| serde_json::json!({"id": r.id, "action": r.action.as_str()}))
            .collect();
        serde_json::json!({
            "allow": self.allow.as_ref().map(|a| a.len()),
            "deny": self.deny.as_ref().map(|d| d.len()),
            "risk": self.risk.iter().map(|(g, r)| (g.glob().glob().to_string(), r.as_str()))
                .collect::<std::collections::BTreeMap<_, _>>(),
            "rules": rules,
        })
    }
}

/// One argument rule.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub id: String,
    pub(super) tool: Option<GlobMatcher>,
    pub(super) pointer: Vec<String>,
    pub(super) checks: Vec<Check>,
    pub action: Action,
}

/// One condition a value must meet.
#[derive(Debug, Clone)]
pub(super) enum Check {
    Enum(Vec<Value>),
    Pattern(regex::Regex),
    Minimum(f64),
    Maximum(f64),
    MaxLength(usize),
    PathPrefix(Vec<String>),
    Url(UrlRule),
}

/// `url:`: where a URL argument may go.
#[derive(Debug, Clone)]
pub(super) struct UrlRule {
    pub(super) schemes: Option<Vec<String>>,
    pub(super) hosts: Option<GlobSet>,
    pub(super) block_private: bool,
    /// Resolve names, within this time: a name with an address inside
    /// the network, or none in time, is inside.
    pub(super) resolve: Option<std::time::Duration>,
}

/// `tools.guard` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGuard {
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    pub risk: Option<std::collections::BTreeMap<String, String>>,
    pub rules: Option<Vec<RawRule>>,
}

/// One rule as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRule {
    pub id: Option<String>,
    pub tool: Option<String>,
    pub pointer: String,
    #[serde(rename = "enum")]
    pub one_of: Option<Vec<Value>>,
    pub pattern: Option<String>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub max_length: Option<usize>,
    pub path_prefix: Option<Vec<String>>,
    pub url: Option<RawUrl>,
    pub action: Option<String>,
}

/// `url:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUrl {
    pub schemes: Option<Vec<String>>,
    pub hosts: Option<Vec<String>>,
    pub block_private: Option<bool>,
    pub resolve: Option<bool>,
    pub resolve_timeout_ms: Option<u64>,
}

fn globs(what: &str, list: &[String]) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for g in list {
        b.add(Glob::new(g).map_err(|e| format!("{what}: {g:?} is not a glob: {e}"))?);
    }
    b.build().map_err(|e| format!("{what}: {e}"))
}

fn glob(what: &str, g: &str) -> Result<GlobMatcher, String> {
    Glob::new(g)
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("{what}: {g:?} is not a glob: {e}"))
}

/// A JSON pointer's segments (`~1` is `/`, `~0` is `~`); `*` matches any.
fn pointer(text: &str) -> Result<Vec<String>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!("pointer {text:?} must start with `/`"));
    };
    let segs: Vec<String> = rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    if segs.len() > MAX_POINTER {
        return Err(format!(
            "pointer {text:?} has more than {MAX_POINTER} segments"
        ));
    }
    Ok(segs)
}

/// Compile `tools.guard`; the error says what is wrong, for the policy
/// error naming the file and key.
pub(crate) fn compile(raw: &RawGuard) -> Result<Guard, String> {
    let rules = raw.rules.as_deref().unwrap_or_default();
    if rules.len() > MAX_RULES {
        return Err(format!("rules: more than {MAX_RULES}"));
    }
    let mut risk = Vec::new();
    for (tool, level) in raw.risk.iter().flatten() {
        let level = match level.as_str() {
            "low" => Risk::Low,
            "medium" => Risk::Medium,
            "high" => Risk::High,
            other => return Err(format!("risk.{tool}: {other:?} is not low, medium or high")),
        };
        risk.push((glob("risk", tool)?, level));
    }
    Ok(Guard {
        allow: raw
            .allow
            .as_deref()
            .map(|a| globs("allow", a))
            .transpose()?,
        deny: raw.deny.as_deref().map(|d| globs("deny", d)).transpose()?,
        risk,
        rules: rules
            .iter()
            .enumerate()
            .map(|(i, r)| compile_rule(i, r))
            .collect::<Result<_, _>>()?,
        written: format!("{raw:?}"),
    })
}

fn compile_rule(i: usize, r: &RawRule) -> Result<Rule, String> {
    let at = format!("rules[{i}]");
    let mut checks = Vec::new();
    if let Some(v) = &r.one_of {
        checks.push(Check::Enum(v.clone()));
    }
    if let Some(p) = &r.pattern {
        let re = regex::RegexBuilder::new(p)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("{at}.pattern: {e}"))?;
        checks.push(Check::Pattern(re));
    }
    if let Some(n) = r.minimum {
        checks.push(Check::Minimum(n));
    }
    if let Some(n) = r.maximum {
        checks.push(Check::Maximum(n));
    }
    if let Some(n) = r.max_length {
        checks.push(Check::MaxLength(n));
    }
    if let Some(p) = &r.path_prefix {
        if p.iter().any(|p| !p.starts_with('/')) {
            return Err(format!(
                "{at}.path_prefix: each prefix must be an absolute path"
            ));
        }
        checks.push(Check::PathPrefix(p.clone()));
    }
    if let Some(u) = &r.url {
        checks.push(Check::Url(UrlRule {
            schemes: u
                .schemes
                .as_ref()
                .map(|s| s.iter().map(|s| s.to_ascii_lowercase()).collect()),
            hosts: u
                .hosts
                .as_deref()
                .map(|h| globs(&format!("{at}.url.hosts"), h))
                .transpose()?,
            block_private: u.block_private.unwrap_or(true),
            resolve: (u.resolve == Some(true)).then(|| {
                std::time::Duration::from_millis(
                    u.resolve_timeout_ms.unwrap_or(1000).clamp(10, 10_000),
                )
            }),
        }));
    }
    if checks.is_empty() {
        return Err(format!(
            "{at}: a rule needs a check (enum, pattern, minimum, maximum, max_length, path_prefix or url)"
        ));
    }
    let action = match r.action.as_deref().unwrap_or("block") {
        "block" => Action::Block,
        "flag" => Action::Flag,
        "log" => Action::Log,
        other => return Err(format!("{at}.action: {other:?} is not block, flag or log")),
    };
    Ok(Rule {
        id: r.id.clone().unwrap_or_else(|| format!("rule-{}", i + 1)),
        tool: r
            .tool
            .as_deref()
            .map(|t| glob(&format!("{at}.tool"), t))
            .transpose()?,
        pointer: pointer(&r.pointer).map_err(|e| format!("{at}: {e}"))?,
        checks,
        action,
    })
}
