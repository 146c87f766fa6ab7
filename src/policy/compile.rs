//! The second stage of loading: raw files ([`super::raw`]) → a compiled
//! [`Policy`]. Validates each file against the embedded JSON Schema, then
//! compiles globs, loads `format` schemas, hashes `key_env` keys and merges
//! files in the order they are added.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, OnceLock},
};

use serde_json::Value;

use super::{
    api_keys::{compile_key, scopes},
    error::PolicyError,
    globs::ModelGlob,
    model::{
        ConfidencePolicy, EmulateTools, FormatApply, ModelPolicy, OnFailure, OnLowConfidence,
        RateLimit, StreamMode, TextFormat, Threshold, ToolsMode,
    },
    raw::{RawFile, RawSettings, RawSmallModel, Tri},
    rules::{ModelRules, Overlay, merge_rate_limit},
    schemas::SchemaReads,
    snapshot::{AuditPolicy, AuthPolicy, OnStoreError, Policy, PolicyMeta, Sources},
    yaml,
};

/// The policy file schema, also shipped as `schemas/policy.schema.json` for editors.
pub const POLICY_SCHEMA: &str = include_str!("../../schemas/policy.schema.json");

fn schema_validator() -> Result<&'static jsonschema::Validator, String> {
    static VALIDATOR: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: Value = serde_json::from_str(POLICY_SCHEMA).map_err(|e| e.to_string())?;
            jsonschema::validator_for(&schema).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| format!("embedded policy schema is broken: {e}"))
}

/// `/models/gemma3:[/rate_limit` → `models."gemma3:[".rate_limit`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
            continue;
        }
        if !out.is_empty() {
            out.push('.');
        }
        if !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push_str(&seg);
        } else {
            out.push_str(&format!("{seg:?}"));
        }
    }
    if out.is_empty() { "(top)".into() } else { out }
}

fn parse_enum<T: Copy>(
    file: &str,
    at: &str,
    value: &str,
    options: &[(&str, T)],
) -> Result<T, PolicyError> {
    options
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| PolicyError::invalid(file, at, format!("unknown value {value:?}")))
}

/// Accumulates files in merge order; [`Builder::finish`] produces the policy.
pub(super) struct Builder<'a> {
    schemas: &'a mut SchemaReads,
    schema_cache: HashMap<String, Arc<Value>>,
    defaults: ModelPolicy,
    default_rate_limit: Option<RateLimit>,
    entries: Vec<(ModelGlob, Overlay)>,
    auth: AuthPolicy,
    audit: AuditPolicy,
    on_store_error: OnStoreError,
    sources: Sources,
}

impl<'a> Builder<'a> {
    /// `schemas` reads (and hashes) every `format` schema file, so a
    /// changed schema changes the policy version.
    pub(super) fn new(schemas: &'a mut SchemaReads) -> Self {
        Self {
            schemas,
            schema_cache: HashMap::new(),
            defaults: ModelPolicy::default(),
            default_rate_limit: None,
            entries: Vec::new(),
            auth: AuthPolicy::default(),
            audit: AuditPolicy::default(),
            on_store_error: OnStoreError::default(),
            sources: Sources::default(),
        }
    }

    fn set_by(&mut self, key: impl Into<String>, file: &str) {
        self.sources.set_by.insert(key.into(), file.to_string());
    }

    /// Parse, validate and merge one file's text. `file` names it in errors.
    pub(super) fn add_file(&mut self, file: &str, text: &str) -> Result<(), PolicyError> {
        let value = yaml::parse(file, text)?;
        let validator =
            schema_validator().map_err(|m| PolicyError::invalid(file, "(schema)", m))?;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .take(5)
            .map(|e| format!("{}: {}", dotted(e.instance_path().as_str()), e))
            .collect();
        if !problems.is_empty() {
            return Err(PolicyError::Schema {
                file: file.to_string(),
                message: problems.join("; "),
            });
        }
        if value.is_null() {
            return Ok(());
        }
        let raw: RawFile = serde_json::from_value(value).map_err(|e| PolicyError::Schema {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        self.add_raw(file, raw)
    }

    fn add_raw(&mut self, file: &str, raw: RawFile) -> Result<(), PolicyError> {
        if let Some(defaults) = &raw.defaults {
            let overlay = self.overlay(file, "defaults", defaults)?;
            for key in super::show::keys_set(defaults) {
                self.set_by(format!("defaults.{key}"), file);
            }
            self.default_rate_limit =
                merge_rate_limit(self.default_rate_limit, &overlay.rate_limit);
            let overlay = Overlay {
                rate_limit: Tri::Absent,
                ..overlay
            };
            overlay.apply(&mut self.defaults);
        }
        for (pattern, settings) in raw.models.into_iter().flatten() {
            let at = format!("models.{pattern:?}");
            let glob = ModelGlob::new(&pattern).map_err(|m| PolicyError::invalid(file, &at, m))?;
            let settings: RawSettings = if settings.is_null() {
                RawSettings::default()
            } else {
                serde_json::from_value(settings)
                    .map_err(|e| PolicyError::invalid(file, &at, e.to_string()))?
            };
            let overlay = self.overlay(file, &at, &settings)?;
            self.entries.push((glob, overlay));
            self.sources.entries.push(file.to_string());
        }
        if let Some(auth) = raw.auth {
            if let Some(required) = auth.required {
                self.auth.required = required;
                self.set_by("auth.required", file);
            }
            if let Some(names) = &auth.anonymous_scopes {
                self.auth.anonymous_scopes = scopes(file, "auth.anonymous_scopes", names)?;
                self.set_by("auth.anonymous_scopes", file);
            }
            for (i, key) in auth.keys.into_iter().flatten().enumerate() {
                let key = compile_key(file, i, key)?;
                let at = format!("auth.keys[{i}]");
                if self.auth.keys.iter().any(|k| k.id == key.id) {
                    let msg = format!("duplicate key id {:?}", key.id);
                    return Err(PolicyError::invalid(file, at, msg));
                }
                if self.auth.keys.iter().any(|k| k.sha256 == key.sha256) {
                    let msg = format!("key {:?} has the same key as another id", key.id);
                    return Err(PolicyError::invalid(file, at, msg));
                }
                self.auth.keys.push(key);
                self.sources.keys.push(file.to_string());
            }
        }
        if let Some(audit) = raw.audit {
            if !matches!(audit.path, Tri::Absent) {
                self.set_by("audit.path", file);
            }
            match audit.path {
                Tri::Absent => {}
                Tri::Null => self.audit.path = None,
                Tri::Set(p) => self.audit.path = Some(p),
            }
            if let Some(inc) = audit.include_arguments {
                self.audit.include_arguments = inc;
                self.set_by("audit.include_arguments", file);
            }
        }
        if let Some(on) = raw.limits.and_then(|l| l.on_store_error) {
            let opts = [("allow", OnStoreError::Allow), ("deny", OnStoreError::Deny)];
            self.on_store_error = parse_enum(file, "limits.on_store_error", &on, &opts)?;
            self.set_by("limits.on_store_error", file);
        }
        Ok(())
    }

    fn overlay(&mut self, file: &str, at: &str, s: &RawSettings) -> Result<Overlay, PolicyError> {
        let mut o = Overlay {
            think_emulation: s.think_emulation,
            parallel_tool_calls: s.tools.as_ref().and_then(|t| t.parallel),
            loop_breaker: s.tools.as_ref().and_then(|t| t.loop_breaker),
            drop_ungrounded: s.tools.as_ref().and_then(|t| t.drop_ungrounded),
            answer_unrelated: s.tools.as_ref().and_then(|t| t.answer_unrelated),
            rescue_text_calls: s.tools.as_ref().and_then(|t| t.rescue_text_calls),
            native_validate: s.tools.as_ref().and_then(|t| t.native?.validate),
            native_recover: s.tools.as_ref().and_then(|t| t.native?.recover),
            advertise_capabilities: s.advertise_capabilities,
            rate_limit: s.rate_limit.clone(),
            concurrency: s.concurrency.clone(),
            fallback: match &s.fallback {
                Tri::Absent => Tri::Absent,
                Tri::Null => Tri::Null,
                Tri::Set(f) => Tri::Set(Arc::new(super::fallback::compile(file, at, f)?)),
            },
            guard: match s.tools.as_ref().map(|t| &t.guard) {
                None | Some(Tri::Absent) => Tri::Absent,
                Some(Tri::Null) => Tri::Null,
                Some(Tri::Set(g)) => {
                    Tri::Set(Arc::new(crate::guard::compile(g).map_err(|message| {
                        PolicyError::invalid(file, format!("{at}.tools.guard"), message)
                    })?))
                }
            },
            ..Overlay::default()
        };
        o.routing = super::routing::overlay(file, at, s)?;
        o.cache = match &s.cache {
            Tri::Absent => Tri::Absent,
            Tri::Null => Tri::Null,
            Tri::Set(c) => Tri::Set(super::cache::compile(file, at, c)?),
        };
        o.record = match &s.record {
            Tri::Absent => Tri::Absent,
            Tri::Null => Tri::Null,
            Tri::Set(r) => Tri::Set(super::record::compile(file, at, r)?),
        };
        if let Some(e) = &s.emulate_tools {
            let opts = [
                ("auto", EmulateTools::Auto),
                ("always", EmulateTools::Always),
                ("never", EmulateTools::Never),
            ];
            o.emulate_tools = Some(parse_enum(file, &format!("{at}.emulate_tools"), e, &opts)?);
        }
        if let Some(t) = &s.tools {
            match &t.small_model {
                None => {}
                Some(RawSmallModel::Flag(on)) => {
                    o.small_model = Some(*on);
                    o.small_model_auto = Some(false);
                }
                Some(RawSmallModel::Word(w)) if w == "auto" => {
                    o.small_model = Some(false);
                    o.small_model_auto = Some(true);
                }
                Some(RawSmallModel::Word(w)) => {
                    return Err(PolicyError::invalid(
                        file,
                        format!("{at}.tools.small_model"),
                        format!("{w:?} is not true, false or auto"),
                    ));
                }
            }
            if let Some(m) = &t.mode {
                let opts = [("grammar", ToolsMode::Grammar), ("text", ToolsMode::Text)];
                o.tools_mode = Some(parse_enum(file, &format!("{at}.tools.mode"), m, &opts)?);
            }
            if let Some(f) = &t.text_format {
                let at = format!("{at}.tools.text_format");
                o.text_format = Some(parse_enum(file, &at, f, &TextFormat::ALL)?);
            }
        }
        if let Some(v) = &s.validate {
            o.validate_enabled = v.enabled;
            o.validate_repair = v.repair;
            o.validate_max_retries = v.max_retries;
            o.validate_degrade = v.degrade;
            o.validate_stream = match &v.stream {
                Tri::Absent => Tri::Absent,
                Tri::Null => Tri::Null,
                Tri::Set(m) => {
                    let opts = [("buffer", StreamMode::Buffer), ("pass", StreamMode::Pass)];
                    Tri::Set(parse_enum(
                        file,
                        &format!("{at}.validate.stream"),
                        m,
                        &opts,
                    )?)
                }
            };
            if let Some(f) = &v.on_failure {
                let opts = [("error", OnFailure::Error), ("pass", OnFailure::Pass)];
                let at = format!("{at}.validate.on_failure");
                o.validate_on_failure = Some(parse_enum(file, &at, f, &opts)?);
            }
            if let Some(f) = &v.on_low_confidence {
                let opts = [
                    ("pass", OnLowConfidence::Pass),
                    ("retry", OnLowConfidence::Retry),
                    ("fallback", OnLowConfidence::Fallback),
                ];
                let at = format!("{at}.validate.on_low_confidence");
                o.validate_on_low_confidence = Some(parse_enum(file, &at, f, &opts)?);
            }
        }
        o.confidence = match s.confidence {
            Tri::Absent => Tri::Absent,
            Tri::Null => Tri::Null,
            Tri::Set(c) => {
                let threshold = match c.threshold {
                    None => ConfidencePolicy::default().threshold,
                    Some(p) => Threshold::new(p).ok_or_else(|| {
                        PolicyError::invalid(
                            file,
                            format!("{at}.confidence.threshold"),
                            "a probability from 0 to 1",
                        )
                    })?,
                };
                Tri::Set(ConfidencePolicy { threshold })
            }
        };
        o.format = match &s.format {
            Tri::Absent => Tri::Absent,
            Tri::Null => Tri::Null,
            Tri::Set(f) => {
                let at = format!("{at}.format");
                let name = f.schema.clone().unwrap_or_default();
                let schema = self.load_schema(file, &at, &name)?;
                let apply = match &f.apply {
                    None => None,
                    Some(a) => {
                        let opts = [
                            ("when_json", FormatApply::WhenJson),
                            ("when_missing", FormatApply::WhenMissing),
                            ("always", FormatApply::Always),
                        ];
                        Some(parse_enum(file, &format!("{at}.apply"), a, &opts)?)
                    }
                };
                Tri::Set((name, schema, apply))
            }
        };
        Ok(o)
    }

    /// Load and check a `format.schema` file once per compile.
    fn load_schema(&mut self, file: &str, at: &str, name: &str) -> Result<Arc<Value>, PolicyError> {
        if let Some(s) = self.schema_cache.get(name) {
            return Ok(s.clone());
        }
        let bad = |m: String| PolicyError::invalid(file, format!("{at}.schema"), m);
        let rel = Path::new(name);
        if name.is_empty()
            || rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(bad(format!(
                "{name:?} must name a file in the schemas directory"
            )));
        }
        let path = self.schemas.dir().join(rel);
        let bytes = self
            .schemas
            .read(name)
            .map_err(|e| bad(format!("schema file {}: {e}", path.display())))?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("schema file {} is not JSON: {e}", path.display())))?;
        // The budget and compile check every client schema passes, so a
        // named format cannot cost a request more than one sent inline.
        crate::validate::compile(&value).map_err(|e| {
            bad(format!(
                "schema file {} cannot be used: schema {e}",
                path.display()
            ))
        })?;
        let value = Arc::new(value);
        self.schema_cache.insert(name.to_string(), value.clone());
        Ok(value)
    }

    /// The merged policy. `last_file` is named if the `models:` globs
    /// together cannot be compiled.
    pub(super) fn finish(self, meta: PolicyMeta, last_file: &str) -> Result<Policy, PolicyError> {
        let models = ModelRules::new(self.defaults, self.entries)
            .map_err(|m| PolicyError::invalid(last_file, "models", m))?;
        Ok(Policy {
            meta: PolicyMeta {
                sources: self.sources,
                ..meta
            },
            auth: self.auth,
            audit: self.audit,
            default_rate_limit: self.default_rate_limit,
            models,
            on_store_error: self.on_store_error,
        })
    }
}
