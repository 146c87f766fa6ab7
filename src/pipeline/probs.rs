//! What a job does with token probabilities: asks the upstream for them
//! where a policy scores answers (see [`super::confidence`]), and takes
//! them out of answers again unless the client asked for them.

use serde_json::{Map, Value, json};

use crate::{confidence::Confidence, policy::ConfidencePolicy};

/// Alternatives asked for per token (the weakest token's are reported).
const TOP_LOGPROBS: u64 = 3;

/// What a job does with token probabilities.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Probs {
    /// The policy that asked for them; `None`: nothing is scored.
    pub policy: Option<ConfidencePolicy>,
    /// The client asked for `logprobs` itself: they stay in the answer.
    pub keep: bool,
}

impl Probs {
    /// Ask for token probabilities in `body` (an Ollama request) when
    /// `policy` wants them; a client's own `logprobs` request is left as
    /// it is, and its probabilities stay in the answer.
    pub(crate) fn ask(policy: Option<ConfidencePolicy>, body: &mut Map<String, Value>) -> Probs {
        let keep = body.get("logprobs") == Some(&Value::Bool(true));
        if policy.is_some() && !keep {
            body.insert("logprobs".into(), Value::Bool(true));
            body.insert("top_logprobs".into(), json!(TOP_LOGPROBS));
        }
        Probs { policy, keep }
    }

    /// Take the token probabilities out of an answer or chunk, unless the
    /// client asked for them.
    pub(crate) fn strip(&self, answer: &mut Value) {
        if self.policy.is_some()
            && !self.keep
            && let Value::Object(m) = answer
        {
            m.remove("logprobs");
        }
    }

    /// The report of an answer scored `c`: its confidence, and the
    /// threshold when it is below it (`None`, `None` when nothing is
    /// scored).
    pub(crate) fn report(
        &self,
        c: Option<Confidence>,
    ) -> (Option<Option<Confidence>>, Option<f64>) {
        let Some(policy) = self.policy else {
            return (None, None);
        };
        let below = self.is_low(c.as_ref()).then(|| policy.threshold.get());
        (Some(c), below)
    }

    /// Whether a confidence of `min` is below this policy's threshold.
    pub(crate) fn is_low_value(&self, min: f64) -> bool {
        self.policy.is_some_and(|p| min < p.threshold.get())
    }

    /// Whether `c` is below this policy's threshold.
    pub(crate) fn is_low(&self, c: Option<&Confidence>) -> bool {
        match (self.policy, c) {
            (Some(p), Some(c)) => c.answer.min < p.threshold.get(),
            _ => false,
        }
    }
}
