//! One model's compiled settings: the `defaults:` and `models.<glob>:`
//! blocks merged into a [`ModelPolicy`], and the blocks it is made of.
//!
//! Built by the policy loader from the YAML files in the policies directory
//! and never changed after; a reload builds new ones.

use std::sync::Arc;

use serde_json::Value;

/// When augur rewrites `tools` into a constrained `format` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmulateTools {
    /// Only when the model's capabilities lack "tools".
    #[default]
    Auto,
    /// Always, even for tool-capable models.
    Always,
    /// Never: requests pass through and the upstream decides.
    Never,
}

/// How emulated tool calls are asked for (`tools.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolsMode {
    /// A `format` schema (the envelope) constrains the answer.
    #[default]
    Grammar,
    /// No `format`: the model writes calls in its own text form
    /// (`tools.text_format`), which augur parses.
    Text,
}

pub use crate::tools::text::TextFormat;

/// How a streamed response with a schema is validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// Hold the answer (bounded), validate, repair or retry, then emit.
    Buffer,
    /// Stream as it comes; report the outcome in the final chunk.
    Pass,
}

/// What augur answers after the last attempt still fails validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// 422 `{"error": "..."}` listing the violations.
    #[default]
    Error,
    /// The best attempt, with `X-Augur-Validation: invalid`.
    Pass,
}

/// What augur does with a valid answer the model was unsure of (below
/// `confidence.threshold`): `validate.on_low_confidence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnLowConfidence {
    /// Return it, reported as low confidence.
    #[default]
    Pass,
    /// Ask the model once more, naming the value it was unsure of.
    Retry,
    /// Let the fallback models answer (when the policy names them).
    Fallback,
}

/// `validate:` policy block.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatePolicy {
    pub enabled: bool,
    pub repair: bool,
    pub max_retries: u32,
    pub degrade: bool,
    /// `None` = the default: buffer for schemas, pass for "json".
    pub stream: Option<StreamMode>,
    pub on_failure: OnFailure,
    pub on_low_confidence: OnLowConfidence,
}

impl Default for ValidatePolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            repair: true,
            max_retries: 1,
            degrade: true,
            stream: None,
            on_failure: OnFailure::Error,
            on_low_confidence: OnLowConfidence::Pass,
        }
    }
}

/// A probability threshold, kept to thousandths (so policies compare and
/// hash exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Threshold(u16);

impl Threshold {
    /// `p` (0 to 1), to the nearest thousandth; `None` outside the range.
    pub fn new(p: f64) -> Option<Threshold> {
        (0.0..=1.0)
            .contains(&p)
            .then(|| Threshold((p * 1000.0).round() as u16))
    }

    pub fn get(self) -> f64 {
        f64::from(self.0) / 1000.0
    }
}

/// `confidence:` block: augur asks the upstream for the answer's token
/// probabilities and reports how sure the model was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConfidencePolicy {
    /// Below it an answer is low-confidence (reported, and acted on as
    /// `validate.on_low_confidence` says).
    pub threshold: Threshold,
}

/// The default `confidence.threshold`.
pub const DEFAULT_CONFIDENCE_THRESHOLD: f64 = 0.5;

impl Default for ConfidencePolicy {
    fn default() -> Self {
        Self {
            threshold: Threshold((DEFAULT_CONFIDENCE_THRESHOLD * 1000.0) as u16),
        }
    }
}

/// When a named schema from `schemas/` replaces the client's `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatApply {
    /// When the client asked for plain JSON mode.
    WhenJson,
    /// When the client sent no format at all.
    WhenMissing,
    /// Always.
    Always,
}

/// `format:` policy block: a named schema bound to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedFormat {
    /// File name under the schemas directory.
    pub name: String,
    pub schema: Arc<Value>,
    pub apply: FormatApply,
}

/// `rate_limit:` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RateLimit {
    pub requests_per_minute: Option<u32>,
    /// Defaults to `requests_per_minute`.
    pub burst: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

/// `concurrency:` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Concurrency {
    pub max_in_flight: u32,
    /// 0 = reject at once when full.
    pub queue_timeout_ms: u64,
}

/// What makes a fallback model answer (`fallback.on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FallbackOn {
    /// The last attempt's answer still fails validation.
    pub invalid: bool,
    /// The last attempt was cut by the token limit with nothing valid.
    pub truncated: bool,
    /// The model's upstreams failed before the first byte.
    pub upstream_error: bool,
    /// The answer is valid only after repairs (opt-in: a confidence
    /// signal beyond pass or fail).
    pub repaired: bool,
}

impl Default for FallbackOn {
    /// The validation outcome and upstream failures; never repairs.
    fn default() -> Self {
        Self {
            invalid: true,
            truncated: true,
            upstream_error: true,
            repaired: false,
        }
    }
}

/// `fallback:` block: the models that answer, in order, when this one's
/// answer keeps failing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fallback {
    /// As written (sent upstream as the request's `model`).
    pub models: Vec<String>,
    pub on: FallbackOn,
    /// `when: {confidence_below}`: a valid answer the model was less sure
    /// of than this goes to the fallback models too.
    pub confidence_below: Option<Threshold>,
}

/// Everything that applies to one model, defaults and matching globs merged.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPolicy {
    pub emulate_tools: EmulateTools,
    pub validate: ValidatePolicy,
    pub think_emulation: bool,
    pub format: Option<NamedFormat>,
    /// `tools: {parallel}`; default true.
    pub parallel_tool_calls: bool,
    /// `tools: {loop_breaker}`; default true: a call repeating one the
    /// conversation already holds a result for is not returned; the model
    /// is asked once more, for an answer.
    pub loop_breaker: bool,
    /// `tools: {small_model}`; default false: turns on the rules that
    /// judge a conversation's words ([`ModelPolicy::drops_ungrounded`],
    /// [`ModelPolicy::answers_unrelated`]), which help very small models
    /// and can withhold a capable model's right answer.
    pub small_model: bool,
    /// `tools: {small_model: auto}`: the same rules, judging only calls
    /// the model was unsure of (below `confidence.threshold`); a call it
    /// was sure of, or whose confidence is unknown, is never touched.
    pub small_model_auto: bool,
    /// `tools: {drop_ungrounded}`; unset = `small_model`: calls after the
    /// first that only continue an earlier call's pattern with values found
    /// nowhere in the conversation are dropped.
    pub drop_ungrounded: Option<bool>,
    /// `tools: {answer_unrelated}`; unset = `small_model`: an answer whose
    /// every call is to a tool sharing no word with the question, with
    /// values found nowhere in the conversation, is asked again for an
    /// answer; a first question no tool relates to, offering no value, is
    /// asked for an answer at once.
    pub answer_unrelated: Option<bool>,
    /// `tools: {rescue_text_calls}`; unset = on under `emulate_tools:
    /// auto`: a call written as text in the answer of a model with native
    /// tools becomes a real tool call (see [`ModelPolicy::rescues_text_calls`]).
    pub rescue_text_calls: Option<bool>,
    /// `tools.native.validate` (default on): a whole answer's native tool
    /// calls are checked against their tools' schemas, repaired, retried.
    pub native_validate: bool,
    /// `tools.native.recover` (default on): an empty native answer (no
    /// calls, no content, tokens generated) is asked once more.
    pub native_recover: bool,
    /// `tools.guard`: tools the caller may be handed and what their
    /// arguments may hold; none by default.
    pub guard: Option<std::sync::Arc<crate::guard::Guard>>,
    /// `tools: {mode}`; default grammar.
    pub tools_mode: ToolsMode,
    /// `tools: {text_format}`: the form text mode asks for; default python.
    pub text_format: TextFormat,
    /// Add "tools" to capabilities of emulated models in /api/show and /api/tags.
    pub advertise_capabilities: bool,
    /// Per (principal, model) rate limit from `models.<glob>.rate_limit`.
    pub rate_limit: Option<RateLimit>,
    pub concurrency: Option<Concurrency>,
    /// `fallback:`: models asked when this one's answer fails.
    pub fallback: Option<Arc<Fallback>>,
    /// `confidence:`: the answer's confidence asked for and reported.
    pub confidence: Option<ConfidencePolicy>,
    /// `routing:` and `affinity:`: how requests spread over upstreams.
    pub routing: super::routing::RoutingPolicy,
    /// `cache:`: deterministic answers kept and replayed; off by default.
    pub cache: Option<super::cache::CachePolicy>,
    /// `record:`: every exchange appended to a file; off by default.
    pub record: Option<super::record::RecordPolicy>,
    /// The glob that selected the model's settings (for metric labels and logs).
    pub matched_glob: Option<String>,
}

impl Default for ModelPolicy {
    fn default() -> Self {
        Self {
            emulate_tools: EmulateTools::Auto,
            validate: ValidatePolicy::default(),
            think_emulation: true,
            format: None,
            parallel_tool_calls: true,
            loop_breaker: true,
            small_model: false,
            small_model_auto: false,
            drop_ungrounded: None,
            answer_unrelated: None,
            rescue_text_calls: None,
            native_validate: true,
            native_recover: true,
            guard: None,
            tools_mode: ToolsMode::Grammar,
            text_format: TextFormat::Python,
            advertise_capabilities: true,
            rate_limit: None,
            concurrency: None,
            fallback: None,
            confidence: None,
            routing: super::routing::RoutingPolicy::default(),
            cache: None,
            record: None,
            matched_glob: None,
        }
    }
}

impl ModelPolicy {
    /// Whether ungrounded calls after the first are dropped:
    /// `tools.drop_ungrounded`, else `tools.small_model`.
    pub fn drops_ungrounded(&self) -> bool {
        self.drop_ungrounded
            .unwrap_or(self.small_model || self.small_model_auto)
    }

    /// Whether calls nobody asked for are replaced by an answer:
    /// `tools.answer_unrelated`, else `tools.small_model`.
    pub fn answers_unrelated(&self) -> bool {
        self.answer_unrelated
            .unwrap_or(self.small_model || self.small_model_auto)
    }

    /// What confidence this model's answers are read with, when anything
    /// asks for it: the `confidence:` block, a fallback on low confidence
    /// or `validate.on_low_confidence` (then with the default threshold).
    pub fn confidence(&self) -> Option<ConfidencePolicy> {
        let acts = self.validate.on_low_confidence != OnLowConfidence::Pass
            || self.small_model_auto
            || self
                .fallback
                .as_ref()
                .is_some_and(|f| f.confidence_below.is_some());
        self.confidence.or(acts.then(ConfidencePolicy::default))
    }

    /// Below what confidence a valid answer goes to the fallback models:
    /// `fallback.when.confidence_below`, else `confidence.threshold` under
    /// `validate.on_low_confidence: fallback`.
    pub fn fallback_below(&self) -> Option<f64> {
        let fallback = self.fallback.as_ref()?;
        let on_low = self.validate.on_low_confidence == OnLowConfidence::Fallback;
        fallback
            .confidence_below
            .map(Threshold::get)
            .or_else(|| on_low.then(|| self.confidence().map(|c| c.threshold.get()))?)
    }

    /// Whether calls a native-tools model writes as text are turned into
    /// tool calls: `tools.rescue_text_calls`, else on under
    /// `emulate_tools: auto`.
    pub fn rescues_text_calls(&self) -> bool {
        self.rescue_text_calls
            .unwrap_or(self.emulate_tools == EmulateTools::Auto)
    }
}
