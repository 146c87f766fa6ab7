//! `tools.guard` on a request's way in and its answer's way out.
//!
//! In: tools the guard does not offer are left out of the request, so no
//! model (emulated or native) is handed them. Out: every call of the
//! answer is judged before the client sees it. A blocked call is
//! withheld; a flagged one goes out marked; every finding is logged and
//! counted in `augur_tool_guard_total{rule,action}`. Whole answers say
//! what happened in `X-Augur-Guard` (`block:<rule>`, `flag:<rule>`) and
//! `X-Augur-Tool-Risk` (the highest risk among the calls returned);
//! streams say it in the done chunk (`augur_guard`, `augur_tool_risk`),
//! each call judged before its chunk is sent. An answer whose every call
//! was blocked, with nothing else to say, is refused (422 in the
//! surface's shape, naming the tool and why, never the value).

use crate::pipeline::job::Marks;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    guard::{Action, Guard, Risk, Verdict},
};

use super::{
    job::Audit,
    output::{self, Item, Output},
};

/// Who an answer is for, as the guard reports its findings: the log's
/// principal, and the audit log when the policy keeps one.
#[derive(Clone)]
pub(super) struct Witness {
    pub(super) principal: String,
    pub(super) audit: Option<Audit>,
}

/// Leave the tools `guard` does not offer out of `body`; whether any was.
pub(super) fn narrow_offer(guard: &Guard, body: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(tools)) = body.get_mut("tools") else {
        return false;
    };
    let before = tools.len();
    tools.retain(|t| {
        let f = t.get("function").unwrap_or(t);
        f.get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| guard.offers(n))
    });
    let narrowed = tools.len() != before;
    if narrowed {
        tracing::info!(
            withheld = before - tools.len(),
            "tools the guard does not offer were left out"
        );
        if tools.is_empty() {
            body.remove("tools");
            body.remove("tool_choice");
        }
    }
    narrowed
}

/// Write `guard`'s `enum` rules into the schemas of the tools `body`
/// declares (see [`Guard::narrow_parameters`]); whether any changed.
pub(super) fn narrow_schemas(guard: &Guard, body: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(tools)) = body.get_mut("tools") else {
        return false;
    };
    let mut changed = false;
    for t in tools.iter_mut() {
        let f = if t.get("function").is_some() {
            t.get_mut("function")
        } else {
            Some(t)
        };
        let Some(Value::Object(f)) = f else { continue };
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(params) = f.get_mut("parameters") {
            changed |= guard.narrow_parameters(&name, params);
        }
    }
    changed
}

/// What the guard did to one answer.
#[derive(Default)]
struct Tally {
    /// `action:rule`, each once, in order.
    marks: Vec<String>,
    risk: Option<Risk>,
    blocked: Vec<String>,
    kept: usize,
}

impl Tally {
    /// Judge `message.tool_calls`, removing the blocked calls.
    async fn judge(&mut self, guard: &Guard, message: &mut Map<String, Value>, witness: &Witness) {
        let Some(Value::Array(calls)) = message.get_mut("tool_calls") else {
            return;
        };
        let mut keep = Vec::with_capacity(calls.len());
        for call in calls.iter() {
            let f = call.get("function").unwrap_or(call);
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let args = crate::guard::read_arguments(f.get("arguments"));
            let verdict = guard.judge_resolving(name, &args).await;
            keep.push(self.record(name, args.shown(), &verdict, witness));
        }
        let mut kept = keep.into_iter();
        calls.retain(|_| kept.next().unwrap_or(false));
        for (i, call) in calls.iter_mut().enumerate() {
            if let Some(Value::Object(f)) = call.get_mut("function")
                && f.contains_key("index")
            {
                f.insert("index".into(), json!(i));
            }
        }
        if calls.is_empty() {
            message.remove("tool_calls");
        }
    }

    /// Log, count and audit one call's findings; whether it goes out.
    fn record(&mut self, name: &str, args: &Value, verdict: &Verdict, witness: &Witness) -> bool {
        for f in &verdict.findings {
            metrics::counter!("augur_tool_guard_total", "rule" => f.rule.clone(), "action" => f.action.as_str())
                .increment(1);
            tracing::warn!(rule = %f.rule, tool = name, action = f.action.as_str(), principal = %witness.principal, "tool guard: {}", f.why);
            if let Some(a) = &witness.audit {
                let outcome = format!("guard_{}:{}", f.action.as_str(), f.rule);
                a.log.record(
                    &a.policy,
                    &a.principal,
                    &a.model,
                    name,
                    &outcome,
                    Some(args),
                );
            }
            let mark = format!("{}:{}", f.action.as_str(), f.rule);
            if f.action != Action::Log && !self.marks.contains(&mark) {
                self.marks.push(mark);
            }
        }
        if verdict.blocked() {
            let why = verdict
                .findings
                .iter()
                .find(|f| f.action == Action::Block)
                .map(|f| f.why.clone())
                .unwrap_or_default();
            self.blocked.push(why);
            return false;
        }
        self.kept += 1;
        self.risk = self.risk.max(verdict.risk);
        true
    }

    /// The marks to report after `earlier` ones (an earlier guard's).
    fn marks_after(&self, earlier: Option<&str>) -> Option<String> {
        if self.marks.is_empty() {
            return earlier.map(str::to_string);
        }
        let mine = self.marks.join(", ");
        Some(match earlier {
            Some(e) if !e.is_empty() => format!("{e}, {mine}"),
            _ => mine,
        })
    }

    /// The higher of this risk and `earlier`.
    fn risk_after(&self, earlier: Option<&str>) -> Option<&'static str> {
        let earlier = match earlier {
            Some("high") => Some(Risk::High),
            Some("medium") => Some(Risk::Medium),
            Some("low") => Some(Risk::Low),
            _ => None,
        };
        self.risk.max(earlier).map(Risk::as_str)
    }
}

fn has_content(message: &Map<String, Value>) -> bool {
    message
        .get("content")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.trim().is_empty())
}

/// What the guard made of an answer.
pub(super) enum Guarded {
    /// The answer, its blocked calls withheld and the rest marked.
    Output(Output),
    /// Every call of a whole answer was blocked and it said nothing else.
    Refused(Refusal),
}

/// A whole answer whose every call was blocked.
pub(super) struct Refusal {
    /// Why, call by call (never the values).
    pub(super) why: Vec<String>,
    /// What the answer reported (`X-Augur-*`), the guard's marks among
    /// them: an answer asked for after the refusal reports them too.
    headers: HeaderMap,
}

impl Guarded {
    /// The answer, or the refusal as a 422.
    pub(super) fn into_result(self) -> Result<Output, ProxyError> {
        match self {
            Guarded::Output(o) => Ok(o),
            Guarded::Refused(r) => Err(refusal(&r.why)),
        }
    }
}

impl Refusal {
    /// `out`, the answer asked for after this refusal, reporting what
    /// fired in both: the upstream calls of both added up
    /// (`X-Augur-Attempts`), the guard's marks and the repairs of both.
    pub(super) fn carried_into(self, mut out: Output) -> Output {
        let (Output::Full { headers, .. } | Output::Stream { headers, .. }) = &mut out;
        let attempts = |h: &HeaderMap| {
            h.get("x-augur-attempts")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(1)
        };
        let total = attempts(&self.headers).saturating_add(attempts(headers));
        headers.insert("x-augur-attempts", HeaderValue::from(total));
        for name in ["x-augur-guard", "x-augur-repaired"] {
            let first = self.headers.get(name).and_then(|v| v.to_str().ok());
            let then = headers.get(name).and_then(|v| v.to_str().ok());
            let joined = match (first, then) {
                (Some(a), Some(b)) => format!("{a}, {b}"),
                (Some(a), None) => a.to_string(),
                _ => continue,
            };
            let mut seen: Vec<&str> = Vec::new();
            for item in joined.split(", ") {
                if !seen.contains(&item) {
                    seen.push(item);
                }
            }
            headers.insert(name, crate::wire::header_text(&seen.join(", ")));
        }
        out
    }
}

/// The 422 of an answer whose every call was blocked.
fn refusal(why: &[String]) -> ProxyError {
    ProxyError::Unprocessable(format!(
        "the tool call was refused by policy: {}",
        why.join("; ")
    ))
}

/// The turn that asks the model once more after its every call was
/// refused: which and why, and to answer without them.
pub(super) fn reask_turn(why: &[String]) -> Value {
    json!({"role": "user", "content": format!(
        "The tool call was refused by policy: {}. Do not make that call again; answer without it.",
        why.join("; ")
    )})
}

/// Judge the calls of `output` against each of `guards` in turn.
pub(super) async fn apply_all(
    guards: &[Arc<Guard>],
    mut output: Output,
    witness: &Witness,
) -> Guarded {
    for g in guards {
        match apply(g.clone(), output, witness.clone()).await {
            Guarded::Output(o) => output = o,
            refused => return refused,
        }
    }
    Guarded::Output(output)
}

/// Judge the calls of `output` against `guard`.
async fn apply(guard: Arc<Guard>, output: Output, witness: Witness) -> Guarded {
    match output {
        Output::Full {
            mut value,
            mut headers,
        } => {
            let mut tally = Tally::default();
            let mut refuse = false;
            if let Some(Value::Object(message)) = value.get_mut("message") {
                tally.judge(&guard, message, &witness).await;
                refuse = !tally.blocked.is_empty() && tally.kept == 0 && !has_content(message);
            }
            let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            let marks = tally.marks_after(text("x-augur-guard"));
            let risk = tally.risk_after(text("x-augur-tool-risk"));
            if let Some(marks) = marks {
                headers.insert("x-augur-guard", crate::wire::header_text(&marks));
            }
            if refuse {
                return Guarded::Refused(Refusal {
                    why: tally.blocked,
                    headers,
                });
            }
            if let Some(r) = risk {
                headers.insert("x-augur-tool-risk", HeaderValue::from_static(r));
            }
            Guarded::Output(Output::Full { value, headers })
        }
        // The pump runs as any stream's producer: dropped, with the
        // upstream work behind it, when the client leaves.
        Output::Stream { rx, headers } => {
            Guarded::Output(output::stream(headers, |tx| pump(guard, rx, tx, witness)))
        }
    }
}

/// Judge each chunk's calls before it goes on; report in the done chunk.
/// Ends when the upstream's chunks do, or is dropped with its client.
async fn pump(
    guard: Arc<Guard>,
    mut rx: mpsc::Receiver<Item>,
    tx: mpsc::Sender<Item>,
    witness: Witness,
) {
    let mut tally = Tally::default();
    let mut said = false;
    while let Some(item) = rx.recv().await {
        let mut chunk = match item {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
        if let Some(Value::Object(message)) = chunk.get_mut("message") {
            let had_calls = message.contains_key("tool_calls");
            tally.judge(&guard, message, &witness).await;
            said |= has_content(message) || message.contains_key("tool_calls");
            let emptied = had_calls && !message.contains_key("tool_calls") && !has_content(message);
            if emptied && !done {
                continue;
            }
        }
        if done {
            if !tally.blocked.is_empty() && tally.kept == 0 && !said {
                let _ = tx.send(Err(refusal(&tally.blocked))).await;
                return;
            }
            if let Some(mut done) = Marks::of(&mut chunk) {
                let marks = tally.marks_after(done.guard());
                let risk = tally.risk_after(done.tool_risk());
                if let Some(marks) = marks {
                    done.set_guard(marks);
                }
                if let Some(r) = risk {
                    done.set_tool_risk(r);
                }
            }
        }
        if tx.send(Ok(chunk)).await.is_err() {
            return;
        }
    }
}
