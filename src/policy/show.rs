//! The merged policy in force, as JSON for `GET /-/policies`, so an
//! operator can see what wins: the defaults, each `models:` glob with the
//! settings a model it matches gets, auth (key ids and the models each may
//! use, never the keys or their hashes) and audit, with the file that set
//! each default and each entry.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{
    model::{
        EmulateTools, FormatApply, ModelPolicy, OnFailure, OnLowConfidence, RateLimit, StreamMode,
        ToolsMode,
    },
    raw::{RawSettings, Tri},
    routing::{Routing, Session},
    snapshot::Policy,
};

/// The dotted keys a `defaults:` or `models.<glob>:` block sets.
pub(crate) fn keys_set(s: &RawSettings) -> Vec<&'static str> {
    let mut keys = Vec::new();
    let mut add = |set: bool, key| {
        if set {
            keys.push(key);
        }
    };
    add(s.emulate_tools.is_some(), "emulate_tools");
    if let Some(v) = &s.validate {
        add(v.enabled.is_some(), "validate.enabled");
        add(v.repair.is_some(), "validate.repair");
        add(v.max_retries.is_some(), "validate.max_retries");
        add(v.degrade.is_some(), "validate.degrade");
        add(!matches!(v.stream, Tri::Absent), "validate.stream");
        add(v.on_failure.is_some(), "validate.on_failure");
        add(v.on_low_confidence.is_some(), "validate.on_low_confidence");
    }
    add(s.think_emulation.is_some(), "think_emulation");
    add(s.routing.is_some(), "routing");
    if let Some(a) = &s.affinity {
        add(a.epsilon.is_some(), "affinity.epsilon");
        add(a.session.is_some(), "affinity.session");
    }
    add(!matches!(s.format, Tri::Absent), "format");
    if let Some(t) = &s.tools {
        add(t.parallel.is_some(), "tools.parallel");
        add(t.loop_breaker.is_some(), "tools.loop_breaker");
        add(t.small_model.is_some(), "tools.small_model");
        add(t.drop_ungrounded.is_some(), "tools.drop_ungrounded");
        add(t.answer_unrelated.is_some(), "tools.answer_unrelated");
        add(t.rescue_text_calls.is_some(), "tools.rescue_text_calls");
        let native = t.native.unwrap_or_default();
        add(native.validate.is_some(), "tools.native.validate");
        add(native.recover.is_some(), "tools.native.recover");
        add(t.mode.is_some(), "tools.mode");
        add(t.text_format.is_some(), "tools.text_format");
        add(!matches!(t.guard, Tri::Absent), "tools.guard");
    }
    add(s.advertise_capabilities.is_some(), "advertise_capabilities");
    add(!matches!(s.rate_limit, Tri::Absent), "rate_limit");
    add(!matches!(s.concurrency, Tri::Absent), "concurrency");
    add(!matches!(s.fallback, Tri::Absent), "fallback");
    add(!matches!(s.confidence, Tri::Absent), "confidence");
    add(!matches!(s.cache, Tri::Absent), "cache");
    add(!matches!(s.record, Tri::Absent), "record");
    keys
}

fn rate_limit(r: Option<RateLimit>) -> Value {
    match r {
        Some(r) if r != RateLimit::default() => json!({
            "requests_per_minute": r.requests_per_minute,
            "burst": r.burst.or(r.requests_per_minute),
            "tokens_per_minute": r.tokens_per_minute,
        }),
        _ => Value::Null,
    }
}

/// One model's settings, keyed as in the policy files.
fn settings(p: &ModelPolicy) -> Value {
    let emulate = match p.emulate_tools {
        EmulateTools::Auto => "auto",
        EmulateTools::Always => "always",
        EmulateTools::Never => "never",
    };
    let stream = p.validate.stream.map(|s| match s {
        StreamMode::Buffer => "buffer",
        StreamMode::Pass => "pass",
    });
    let on_failure = match p.validate.on_failure {
        OnFailure::Error => "error",
        OnFailure::Pass => "pass",
    };
    let format = p.format.as_ref().map(|f| {
        let apply = match f.apply {
            FormatApply::WhenJson => "when_json",
            FormatApply::WhenMissing => "when_missing",
            FormatApply::Always => "always",
        };
        json!({"schema": f.name, "apply": apply})
    });
    json!({
        "emulate_tools": emulate,
        "validate": {
            "enabled": p.validate.enabled,
            "repair": p.validate.repair,
            "max_retries": p.validate.max_retries,
            "degrade": p.validate.degrade,
            "stream": stream,
            "on_failure": on_failure,
            "on_low_confidence": match p.validate.on_low_confidence {
                OnLowConfidence::Pass => "pass",
                OnLowConfidence::Retry => "retry",
                OnLowConfidence::Fallback => "fallback",
            },
        },
        "confidence": p.confidence.map(|c| json!({"threshold": c.threshold.get()})),
        "think_emulation": p.think_emulation,
        "format": format,
        "tools": {
            "parallel": p.parallel_tool_calls,
            "loop_breaker": p.loop_breaker,
            "small_model": if p.small_model_auto { json!("auto") } else { json!(p.small_model) },
            "drop_ungrounded": p.drops_ungrounded(),
            "answer_unrelated": p.answers_unrelated(),
            "rescue_text_calls": p.rescues_text_calls(),
            "native": {"validate": p.native_validate, "recover": p.native_recover},
            "mode": match p.tools_mode {
                ToolsMode::Grammar => "grammar",
                ToolsMode::Text => "text",
            },
            "text_format": p.text_format.name(),
            "guard": p.guard.as_ref().map(|g| g.summary()),
        },
        "advertise_capabilities": p.advertise_capabilities,
        "routing": match p.routing.routing {
            Routing::Affinity => "affinity",
            Routing::LeastLoaded => "least_loaded",
        },
        "affinity": {
            "epsilon": p.routing.epsilon,
            "session": match p.routing.session {
                Session::Header => "header",
                Session::Principal => "principal",
                Session::Prefix => "prefix",
            },
        },
        "rate_limit": rate_limit(p.rate_limit),
        "concurrency": p.concurrency.map(|c| json!({
            "max_in_flight": c.max_in_flight,
            "queue_timeout_ms": c.queue_timeout_ms,
        })),
        "fallback": p.fallback.as_ref().map(|f| {
            let on: Vec<&str> = [
                (f.on.invalid, "invalid"),
                (f.on.truncated, "truncated"),
                (f.on.upstream_error, "upstream_error"),
                (f.on.repaired, "repaired"),
            ]
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect();
            let when = f
                .confidence_below
                .map(|t| json!({"confidence_below": t.get()}));
            json!({"models": f.models, "on": on, "when": when})
        }),
        "cache": p.cache.as_ref().map(|c| json!({
            "ttl": super::cache::show_duration(c.ttl),
            "max_bytes": c.max_bytes,
            "share": c.share,
            "charge_hits": c.charge_hits,
            "store": "memory",
        })),
        "record": p.record.as_ref().map(|r| json!({
            "path": r.path,
            "max_bytes": r.max_bytes,
            "keep": r.keep,
            "redact": r.redact,
        })),
    })
}

/// The `effective` part of `GET /-/policies`:
///
/// ```json
/// {"defaults": {…, "rate_limit": per principal},
///  "models": [{"glob": "gemma3:*", "files": […], "settings": {…}}],
///  "auth": {"required": true, "anonymous_scopes": ["generate", "read"],
///           "keys": [{"id", "file", "models", "rate_limit", "weight", "scopes"}]},
///  "audit": {"path", "include_arguments"},
///  "limits": {"on_store_error": "allow"},
///  "set_by": {"defaults.tools.parallel": "policies/10-site.yaml", …}}
/// ```
///
/// A glob's `settings` are the defaults with every entry of that glob
/// applied in order: what a model matched by that glob alone gets (a model
/// several globs match gets them in the order listed). A key's
/// `rate_limit` is the one it is held to (its own, or the defaults').
pub(crate) fn effective(policy: &Policy) -> Value {
    let sources = &policy.meta.sources;
    let defaults = policy.models.defaults();
    let mut shown_defaults = settings(defaults);
    shown_defaults["rate_limit"] = rate_limit(policy.default_rate_limit);

    let entries = policy.models.entries();
    let mut globs: Vec<&str> = Vec::new();
    for (g, _) in entries {
        if !globs.contains(&g.pattern()) {
            globs.push(g.pattern());
        }
    }
    let models: Vec<Value> = globs
        .iter()
        .map(|&glob| {
            let mut p = (**defaults).clone();
            let mut files: Vec<&str> = Vec::new();
            for (i, (g, overlay)) in entries.iter().enumerate() {
                if g.pattern() == glob {
                    overlay.apply(&mut p);
                    if let Some(f) = sources.entries.get(i)
                        && !files.contains(&f.as_str())
                    {
                        files.push(f);
                    }
                }
            }
            json!({"glob": glob, "files": files, "settings": settings(&p)})
        })
        .collect();

    let keys: Vec<Value> = policy
        .auth
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let limit = k.rate_limit.or(policy.default_rate_limit);
            json!({
                "id": k.id,
                "file": sources.keys.get(i),
                "models": if k.models.is_empty() { json!("all") } else { json!(k.models) },
                "rate_limit": rate_limit(limit),
                "weight": k.weight,
                "scopes": k.scopes.names(),
            })
        })
        .collect();

    let set_by: Map<String, Value> = sources
        .set_by
        .iter()
        .map(|(k, f)| (k.clone(), Value::String(f.clone())))
        .collect();
    json!({
        "defaults": shown_defaults,
        "models": models,
        "auth": {
            "required": policy.auth.required,
            "anonymous_scopes": policy.auth.anonymous_scopes.names(),
            "keys": keys,
        },
        "audit": {
            "path": policy.audit.path,
            "include_arguments": policy.audit.include_arguments,
        },
        "limits": {"on_store_error": policy.on_store_error.as_str()},
        "set_by": set_by,
    })
}

/// What `GET /-/policies` warns about in the policy in force: each
/// fallback model no upstream lists, as `models.<glob>.fallback.models:
/// "name" is listed by no upstream` (or `defaults.fallback.models: …`).
/// `listed(name)` says whether some upstream lists a (normalized) model
/// name: `Some(false)` only when none does and every list is known;
/// `None` (no warning) when it cannot be told.
pub(crate) fn fallback_warnings(
    policy: &Policy,
    listed: impl Fn(&str) -> Option<bool>,
) -> Vec<String> {
    let defaults = policy.models.defaults();
    let mut blocks: Vec<(String, ModelPolicy)> =
        vec![("defaults".to_string(), (**defaults).clone())];
    let entries = policy.models.entries();
    for (glob, _) in entries {
        let at = format!("models.{}", glob.pattern());
        if blocks.iter().any(|(a, _)| *a == at) {
            continue;
        }
        let mut p = (**defaults).clone();
        for (_, overlay) in entries
            .iter()
            .filter(|(g, _)| g.pattern() == glob.pattern())
        {
            overlay.apply(&mut p);
        }
        blocks.push((at, p));
    }
    let mut warnings = Vec::new();
    for (at, p) in &blocks {
        let Some(fallback) = &p.fallback else {
            continue;
        };
        for model in &fallback.models {
            let name = crate::wire::normalize_model_name(model);
            let warning = format!("{at}.fallback.models: {model:?} is listed by no upstream");
            if listed(&name) == Some(false) && !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    warnings
}

/// Whether some upstream lists a (normalized) model name, as
/// [`fallback_warnings`] asks, read from the upstreams' state
/// (`/-/upstreams`, as the fleet writes it): an upstream whose list is
/// not known, or not shown whole, leaves a name it might have unknown.
pub(crate) fn listed_by(upstreams: &Value) -> impl Fn(&str) -> Option<bool> + use<> {
    let mut names: HashSet<String> = HashSet::new();
    let mut complete = true;
    let all = upstreams.get("upstreams").and_then(Value::as_array);
    for u in all.into_iter().flatten() {
        let shown = u.get("models").and_then(Value::as_array);
        let count = u.get("model_count").and_then(Value::as_u64);
        let known = u.get("models_source").and_then(Value::as_str) != Some("unknown");
        let whole = shown.is_some_and(|m| Some(m.len() as u64) == count);
        complete &= known && whole;
        names.extend(
            shown
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string),
        );
    }
    let told = complete && all.is_some_and(|a| !a.is_empty());
    move |name: &str| {
        if names.contains(name) {
            Some(true)
        } else {
            told.then_some(false)
        }
    }
}
