//! What the status page shows of the limits: the concurrency queues (per
//! model, who waits, weighted fairly), the token budgets' balances, the
//! request rates each principal runs under and what is left of the ones
//! used lately, and the shared store's health. Read from this replica's own state under each table's lock,
//! briefly; with a shared store the rates and budgets it holds are not
//! read (each replica's queues are its own anyway).

use serde_json::{Value, json};

use super::{fair::GateView, limiter::Limits};
use crate::policy::{Policy, RateLimit};

/// Most queues, budgets or keys listed.
pub(crate) const MAX_ROWS: usize = 100;

fn rate_json(rate: Option<RateLimit>) -> Value {
    match rate {
        None => Value::Null,
        Some(r) => json!({
            "requests_per_minute": r.requests_per_minute,
            "burst": r.burst.or(r.requests_per_minute),
            "tokens_per_minute": r.tokens_per_minute,
        }),
    }
}

impl Limits {
    /// The limits' live state under `policy`, as the status page shows it.
    pub fn status_json(&self, policy: &Policy) -> Value {
        let queues: Vec<Value> = self
            .inner
            .semaphores
            .views(MAX_ROWS)
            .into_iter()
            .map(|(model, gate)| queue_json(&model, gate))
            .collect();
        let budgets: Vec<Value> = self
            .inner
            .tokens
            .views(MAX_ROWS)
            .into_iter()
            .map(|(who, per_minute, balance)| {
                let (principal, model) = split(who);
                json!({
                    "principal": principal,
                    "model": model,
                    "tokens_per_minute": per_minute,
                    "balance": balance.floor(),
                    "used": (per_minute as f64 - balance).max(0.0).ceil(),
                })
            })
            .collect();
        let usage: Vec<Value> = self
            .inner
            .rates
            .views(MAX_ROWS)
            .into_iter()
            .map(|(scope, who, burst, remaining)| {
                let (principal, model) = split(who);
                json!({
                    "scope": scope.as_str(),
                    "principal": principal,
                    "model": model,
                    "burst": burst,
                    "remaining": remaining,
                })
            })
            .collect();
        let keys: Vec<Value> = policy
            .auth
            .keys
            .iter()
            .take(MAX_ROWS)
            .map(|k| {
                json!({
                    "id": k.id,
                    "weight": k.weight,
                    "rate_limit": rate_json(k.rate_limit.or(policy.default_rate_limit)),
                })
            })
            .collect();
        let store = self
            .store_health()
            .map(|h| json!({ "location": h.location, "up": h.up, "error": h.error }));
        json!({
            "queues": queues,
            "budgets": budgets,
            "rates": {
                "default": rate_json(policy.default_rate_limit),
                "keys": keys,
                "usage": usage,
            },
            "store": store,
        })
    }
}

/// A limiter key: the principal's (`key:<id>`, `ip:<address>`), and the
/// model's name for per-model limits.
fn split(who: String) -> (String, Option<String>) {
    match who.split_once('\0') {
        Some((p, m)) => (p.to_string(), Some(m.to_string())),
        None => (who, None),
    }
}

fn queue_json(model: &str, gate: GateView) -> Value {
    let waiting: Vec<Value> = gate
        .waiting
        .into_iter()
        .map(|(principal, n)| json!({ "principal": principal, "waiting": n }))
        .collect();
    json!({
        "model": model,
        "rule": gate.label,
        "max_in_flight": gate.max,
        "in_flight": gate.in_flight,
        "waiting": waiting,
    })
}
