//! What every stage shares: the job a transformed request runs as (its
//! body, what its answer must be, its policy, its audit and fallback
//! chain), what an attempt expects and produced, and how the answer is
//! delivered. The stages add behaviour to [`Job`] in their own modules:
//! [`crate::pipeline::attempt`] runs it to an answer,
//! [`crate::pipeline::deliver`] sends that answer as the client asked.

pub(crate) mod chain;
pub(crate) mod expect;
pub(crate) mod marks;

use serde_json::{Map, Value};

use crate::{policy::ValidatePolicy, tools, validate::Validators};

use super::{call::CallCtx, plan::Route};

pub(crate) use chain::{Answered, Chain, Reason, Seat, Tried};
pub(crate) use expect::{
    Completed, Expect, Interp, Seed, TextMode, answer_text, cut_short, is_schema_rejection,
};
pub(crate) use marks::{Marks, Verdict};

/// How a streamed, validated answer is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// One JSON object.
    Whole,
    /// Held, validated, then sent as chunks.
    Buffered,
    /// Streamed as it comes; the outcome is reported in the done chunk.
    Pass,
    /// Streamed with incremental tool-call extraction.
    Tools,
    /// Streamed emulated thinking: thinking as it comes, then the answer.
    Think,
}

/// Everything a flow needs.
pub(crate) struct Job {
    pub ctx: CallCtx,
    pub route: Route,
    pub body: Map<String, Value>,
    pub expect: Expect,
    pub validate: ValidatePolicy,
    pub validators: Validators,
    pub emulated: Option<&'static str>,
    /// Where emulated tool calls are recorded, if the policy asks for it.
    pub audit: Option<Audit>,
    /// The models that answer when this one's answer fails (see
    /// [`crate::pipeline::attempt::fallback`]).
    pub fallback: Option<std::sync::Arc<Chain>>,
    /// The chain's next model: 0 for the requested model's job.
    pub position: usize,
    /// The fallback this job runs for, when it does.
    pub answered: Option<Answered>,
    /// Where fallback models take their concurrency slots, and the slot
    /// this job's fallback model holds.
    pub seat: Seat,
}

/// The JSONL audit of emulated tool calls for one request.
#[derive(Clone)]
pub(crate) struct Audit {
    pub log: crate::policy::AuditLog,
    pub policy: crate::policy::AuditPolicy,
    pub principal: String,
    pub model: String,
}

impl Audit {
    /// Record one call and its outcome ("valid", "repaired", "invalid").
    pub(crate) fn record(&self, call: &tools::ToolCall, outcome: &str) {
        self.log.record(
            &self.policy,
            &self.principal,
            &self.model,
            &call.name,
            outcome,
            Some(&call.arguments),
        );
    }
}
