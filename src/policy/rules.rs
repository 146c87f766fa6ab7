//! Which `models.<glob>` entries apply to a model name, and how they are
//! merged over the defaults. The globs match as [`super::globs`] says.
//!
//! Resolution for a model: the built-in defaults, then every `defaults:`
//! block in file order, then every matching `models:` entry in file order
//! and, within a file, in the order written. Each step overrides key by key
//! (`validate.max_retries` alone changes only that key); `null` on
//! `format`, `rate_limit` or `concurrency` removes an inherited block.

use std::sync::Arc;

use globset::{GlobSet, GlobSetBuilder};

use super::{
    globs::ModelGlob,
    model::{
        Concurrency, ConfidencePolicy, EmulateTools, Fallback, FormatApply, ModelPolicy,
        NamedFormat, OnFailure, OnLowConfidence, RateLimit, StreamMode, TextFormat, ToolsMode,
    },
    raw::{RawConcurrency, RawRateLimit, Tri},
};
use crate::wire::normalize_model_name;

/// Default `concurrency.queue_timeout_ms` when a block leaves it out.
pub(crate) const DEFAULT_QUEUE_TIMEOUT_MS: u64 = 30_000;

/// The compiled settings of one `defaults:` or `models.<glob>:` block.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    pub emulate_tools: Option<EmulateTools>,
    pub validate_enabled: Option<bool>,
    pub validate_repair: Option<bool>,
    pub validate_max_retries: Option<u32>,
    pub validate_degrade: Option<bool>,
    pub validate_stream: Tri<StreamMode>,
    pub validate_on_failure: Option<OnFailure>,
    pub validate_on_low_confidence: Option<OnLowConfidence>,
    pub think_emulation: Option<bool>,
    /// Schema name, loaded schema, optional `apply`.
    pub format: Tri<(String, Arc<serde_json::Value>, Option<FormatApply>)>,
    pub parallel_tool_calls: Option<bool>,
    pub loop_breaker: Option<bool>,
    pub small_model: Option<bool>,
    pub small_model_auto: Option<bool>,
    pub drop_ungrounded: Option<bool>,
    pub answer_unrelated: Option<bool>,
    pub rescue_text_calls: Option<bool>,
    pub native_validate: Option<bool>,
    pub native_recover: Option<bool>,
    pub tools_mode: Option<ToolsMode>,
    pub text_format: Option<TextFormat>,
    pub advertise_capabilities: Option<bool>,
    pub rate_limit: Tri<RawRateLimit>,
    pub concurrency: Tri<RawConcurrency>,
    /// A block replaces the inherited one whole.
    pub fallback: Tri<Arc<Fallback>>,
    /// `tools.guard`; a block replaces the inherited one whole.
    pub guard: Tri<Arc<crate::guard::Guard>>,
    /// `confidence:`; a block replaces the inherited one whole.
    pub confidence: Tri<ConfidencePolicy>,
    /// `routing:` and `affinity:`.
    pub routing: super::routing::RoutingOverlay,
    /// `cache:`; a block replaces the inherited one whole.
    pub cache: Tri<super::cache::CachePolicy>,
    /// `record:`; a block replaces the inherited one whole.
    pub record: Tri<super::record::RecordPolicy>,
}

fn set<T: Copy>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// Merge a `rate_limit` block over an inherited one, key by key.
pub(crate) fn merge_rate_limit(
    base: Option<RateLimit>,
    over: &Tri<RawRateLimit>,
) -> Option<RateLimit> {
    match over {
        Tri::Absent => base,
        Tri::Null => None,
        Tri::Set(r) => {
            let b = base.unwrap_or(RateLimit {
                requests_per_minute: None,
                burst: None,
                tokens_per_minute: None,
            });
            Some(RateLimit {
                requests_per_minute: r.requests_per_minute.or(b.requests_per_minute),
                burst: r.burst.or(b.burst),
                tokens_per_minute: r.tokens_per_minute.or(b.tokens_per_minute),
            })
        }
    }
}

impl Overlay {
    /// Apply this block over `p`, key by key.
    pub fn apply(&self, p: &mut ModelPolicy) {
        set(&mut p.emulate_tools, self.emulate_tools);
        set(&mut p.validate.enabled, self.validate_enabled);
        set(&mut p.validate.repair, self.validate_repair);
        set(&mut p.validate.max_retries, self.validate_max_retries);
        set(&mut p.validate.degrade, self.validate_degrade);
        match self.validate_stream {
            Tri::Absent => {}
            Tri::Null => p.validate.stream = None,
            Tri::Set(s) => p.validate.stream = Some(s),
        }
        set(&mut p.validate.on_failure, self.validate_on_failure);
        set(
            &mut p.validate.on_low_confidence,
            self.validate_on_low_confidence,
        );
        match self.confidence {
            Tri::Absent => {}
            Tri::Null => p.confidence = None,
            Tri::Set(c) => p.confidence = Some(c),
        }
        set(&mut p.think_emulation, self.think_emulation);
        match &self.format {
            Tri::Absent => {}
            Tri::Null => p.format = None,
            Tri::Set((name, schema, apply)) => {
                let inherited = p.format.as_ref().map(|f| f.apply);
                p.format = Some(NamedFormat {
                    name: name.clone(),
                    schema: schema.clone(),
                    apply: apply.or(inherited).unwrap_or(FormatApply::WhenJson),
                });
            }
        }
        set(&mut p.parallel_tool_calls, self.parallel_tool_calls);
        set(&mut p.loop_breaker, self.loop_breaker);
        set(&mut p.small_model, self.small_model);
        set(&mut p.small_model_auto, self.small_model_auto);
        if self.drop_ungrounded.is_some() {
            p.drop_ungrounded = self.drop_ungrounded;
        }
        if self.answer_unrelated.is_some() {
            p.answer_unrelated = self.answer_unrelated;
        }
        if self.rescue_text_calls.is_some() {
            p.rescue_text_calls = self.rescue_text_calls;
        }
        set(&mut p.native_validate, self.native_validate);
        set(&mut p.native_recover, self.native_recover);
        match &self.guard {
            Tri::Absent => {}
            Tri::Null => p.guard = None,
            Tri::Set(g) => p.guard = Some(g.clone()),
        }
        set(&mut p.tools_mode, self.tools_mode);
        set(&mut p.text_format, self.text_format);
        set(&mut p.advertise_capabilities, self.advertise_capabilities);
        self.routing.apply(&mut p.routing);
        p.rate_limit = merge_rate_limit(p.rate_limit, &self.rate_limit);
        match self.concurrency {
            Tri::Absent => {}
            Tri::Null => p.concurrency = None,
            Tri::Set(c) => {
                let inherited = p.concurrency;
                let max = c.max_in_flight.or(inherited.map(|i| i.max_in_flight));
                p.concurrency = max.map(|max_in_flight| Concurrency {
                    max_in_flight,
                    queue_timeout_ms: c
                        .queue_timeout_ms
                        .or(inherited.map(|i| i.queue_timeout_ms))
                        .unwrap_or(DEFAULT_QUEUE_TIMEOUT_MS),
                });
            }
        }
        match &self.fallback {
            Tri::Absent => {}
            Tri::Null => p.fallback = None,
            Tri::Set(f) => p.fallback = Some(f.clone()),
        }
        match &self.cache {
            Tri::Absent => {}
            Tri::Null => p.cache = None,
            Tri::Set(c) => p.cache = Some(c.clone()),
        }
        match &self.record {
            Tri::Absent => {}
            Tri::Null => p.record = None,
            Tri::Set(r) => p.record = Some(r.clone()),
        }
    }
}

/// Compiled `models:` map plus the resolved defaults.
#[derive(Debug, Clone, Default)]
pub struct ModelRules {
    defaults: Arc<ModelPolicy>,
    entries: Vec<(ModelGlob, Overlay)>,
    /// Every entry's glob, matched in one pass (entry `i` is glob `i`).
    set: GlobSet,
}

impl ModelRules {
    /// Rules from resolved defaults and `models:` entries in merge order.
    pub fn new(defaults: ModelPolicy, entries: Vec<(ModelGlob, Overlay)>) -> Result<Self, String> {
        let mut builder = GlobSetBuilder::new();
        for (g, _) in &entries {
            builder.add(g.glob().clone());
        }
        let set = builder.build().map_err(|e| e.to_string())?;
        Ok(Self {
            defaults: Arc::new(defaults),
            entries,
            set,
        })
    }

    /// The defaults every model starts from.
    pub fn defaults(&self) -> &Arc<ModelPolicy> {
        &self.defaults
    }

    /// The `models:` entries, in merge order.
    pub fn entries(&self) -> &[(ModelGlob, Overlay)] {
        &self.entries
    }

    /// Settings for `model` (as the client wrote it; normalized here).
    pub fn resolve(&self, model: &str) -> Arc<ModelPolicy> {
        if self.entries.is_empty() {
            return self.defaults.clone();
        }
        self.resolve_normalized(&normalize_model_name(model))
    }

    /// Settings for an already normalized model name.
    pub fn resolve_normalized(&self, name: &str) -> Arc<ModelPolicy> {
        if self.entries.is_empty() {
            return self.defaults.clone();
        }
        let mut matching = self.set.matches(name);
        if matching.is_empty() {
            return self.defaults.clone();
        }
        // In merge order: later entries override earlier ones.
        matching.sort_unstable();
        let mut p = (*self.defaults).clone();
        for i in matching {
            if let Some((g, overlay)) = self.entries.get(i) {
                overlay.apply(&mut p);
                p.matched_glob = Some(g.pattern().to_string());
            }
        }
        Arc::new(p)
    }
}
