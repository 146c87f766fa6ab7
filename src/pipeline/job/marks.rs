//! The done chunk's `augur_*` fields: what augur did to an answer, told to
//! the client in the answer itself (README "Response fields"). Every stage
//! marks a done chunk through [`Marks`], so each field's name and the
//! shape of its value are written here once.

use serde_json::{Map, Value};

/// `augur_validation`: the verdict on an answer that was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Valid,
    Invalid,
    /// Streamed past the point augur could check it.
    Unchecked,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unchecked => "unchecked",
        }
    }
}

/// A done chunk's fields, being marked.
pub(crate) struct Marks<'a>(&'a mut Map<String, Value>);

impl<'a> Marks<'a> {
    /// The marks of `chunk`; `None` when it is not an object.
    pub(crate) fn of(chunk: &'a mut Value) -> Option<Self> {
        match chunk {
            Value::Object(fields) => Some(Self(fields)),
            _ => None,
        }
    }

    /// The marks of an object's fields.
    pub(crate) fn on(fields: &'a mut Map<String, Value>) -> Self {
        Self(fields)
    }

    fn set(&mut self, name: &str, value: Value) {
        self.0.insert(name.to_owned(), value);
    }

    fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    /// `augur_validation`.
    pub(crate) fn validation(&mut self, verdict: Verdict) {
        self.set("augur_validation", Value::from(verdict.as_str()));
    }

    /// `augur_violations`: what an invalid answer broke, in words.
    pub(crate) fn violations(&mut self, described: String) {
        self.set("augur_violations", Value::String(described));
    }

    /// `augur_repaired`: the repairs made, comma-separated.
    pub(crate) fn repaired(&mut self, repairs: &[impl AsRef<str>]) {
        let joined: Vec<&str> = repairs.iter().map(AsRef::as_ref).collect();
        self.set("augur_repaired", Value::String(joined.join(", ")));
    }

    /// `augur_model`: the model that answered, when not the one asked.
    pub(crate) fn model(&mut self, name: &str) {
        self.set("augur_model", Value::from(name));
    }

    /// `augur_fallback`: why a fallback model answered, or that none could.
    pub(crate) fn fallback(&mut self, reason: &str) {
        self.set("augur_fallback", Value::from(reason));
    }

    /// `augur_guard`, as a stage before this one may have set it.
    pub(crate) fn guard(&self) -> Option<&str> {
        self.text("augur_guard")
    }

    /// `augur_guard`: the tool guard's marks.
    pub(crate) fn set_guard(&mut self, marks: String) {
        self.set("augur_guard", Value::String(marks));
    }

    /// `augur_tool_risk`, as a stage before this one may have set it.
    pub(crate) fn tool_risk(&self) -> Option<&str> {
        self.text("augur_tool_risk")
    }

    /// `augur_tool_risk`: the highest risk of the calls let through.
    pub(crate) fn set_tool_risk(&mut self, risk: &str) {
        self.set("augur_tool_risk", Value::from(risk));
    }

    /// `augur_confidence`: the answer's weakest token probability, or
    /// `"unknown"`.
    pub(crate) fn confidence(&mut self, value: Value) {
        self.set("augur_confidence", value);
    }

    /// `augur_confidence_calls`: each call's signals.
    pub(crate) fn confidence_calls(&mut self, calls: Vec<Value>) {
        self.set("augur_confidence_calls", Value::Array(calls));
    }

    /// `augur_confidence_below`: the policy's threshold, when the answer
    /// fell under it.
    pub(crate) fn confidence_below(&mut self, threshold: Value) {
        self.set("augur_confidence_below", threshold);
    }
}

#[cfg(test)]
#[path = "marks_tests.rs"]
mod tests;
