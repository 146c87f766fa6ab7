//! The installed-model catalog and the model-listing endpoints: `/`, `/api/version`,
//! `/api/tags`, `/api/ps`, `/api/show`, plus model-name normalisation like Ollama's.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::Shared;
use crate::wire::{self, ApiError, JSON_UTF8, go_json, respond};

pub const CAP_TOOLS: &str = "tools";
pub const CAP_THINKING: &str = "thinking";

/// Fault-injection models (see the crate docs); all have just the `completion` capability.
pub const FAULT_MODELS: &[&str] = &[
    "slow-first-byte",
    "slow-stream",
    "stream-cut",
    "error-500",
    "bad-json",
    "truncated",
    "invalid-then-valid",
    "long-stream",
    "echo",
    "tool-json",
    "reject-schema",
    "dribble",
    "mid-cut",
    "loop-array",
    "loop-string",
    "loop-repeat",
];

/// Fault models with the `tools` capability (see the crate docs).
pub const TOOL_FAULT_MODELS: &[&str] = &["text-call"];

const MODIFIED_AT: &str = "2025-09-14T10:21:07.531219862Z";
const MODIFIED_UNIX: i64 = 1_757_845_267;

/// One installed model.
#[derive(Debug, Clone)]
pub struct Model {
    /// Normalised `name:tag`.
    pub name: String,
    pub family: &'static str,
    pub parameter_size: &'static str,
    pub capabilities: Vec<&'static str>,
    /// The model this one is a copy of (`ollama cp`): the same manifest,
    /// so the same digest.
    pub copy_of: Option<String>,
    /// How many times the model was rebuilt under its name (a new pull or
    /// create): each build has its own digest.
    pub revision: u32,
}

impl Model {
    /// A completion-only model named `name` (normalized).
    pub fn plain(name: &str) -> Self {
        Model {
            name: name.to_owned(),
            family: "llama",
            parameter_size: "3.2B",
            capabilities: vec!["completion"],
            copy_of: None,
            revision: 0,
        }
    }

    /// A copy of `self` named `name` (normalized).
    pub fn copied_as(&self, name: &str) -> Self {
        Model {
            name: name.to_owned(),
            copy_of: Some(self.copy_of.clone().unwrap_or_else(|| self.name.clone())),
            ..self.clone()
        }
    }
    pub fn has(&self, cap: &str) -> bool {
        self.capabilities.contains(&cap)
    }
    /// The part before `:tag`.
    pub fn base(&self) -> &str {
        self.name.split(':').next().unwrap_or(&self.name)
    }
    /// `registry.ollama.ai/library/<m>:<tag>`, as in capability errors.
    pub fn full_name(&self) -> String {
        format!("registry.ollama.ai/library/{}", self.name)
    }
    fn digest(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.copy_of.as_ref().unwrap_or(&self.name).bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        if self.revision > 0 {
            h = (h ^ u64::from(self.revision)).wrapping_mul(0x100_0000_01b3);
        }
        format!("{h:016x}").repeat(4)
    }
    fn size(&self) -> u64 {
        2_019_393_189 + 1_000_003 * self.name.len() as u64
    }
    fn details(&self) -> Value {
        json!({ "parent_model": "", "format": "gguf", "family": self.family,
            "families": [self.family], "parameter_size": self.parameter_size,
            "quantization_level": "Q4_K_M" })
    }
}

pub fn default_models() -> Vec<Model> {
    let m = |name: &str, family, size, caps: &[&'static str]| Model {
        name: name.to_owned(),
        family,
        parameter_size: size,
        capabilities: caps.to_vec(),
        copy_of: None,
        revision: 0,
    };
    let mut v = vec![
        m(
            "llama3.2:latest",
            "llama",
            "3.2B",
            &["completion", CAP_TOOLS],
        ),
        m("gemma3:latest", "gemma3", "4.3B", &["completion", "vision"]),
        m(
            "qwen3:latest",
            "qwen3",
            "8.2B",
            &["completion", CAP_TOOLS, CAP_THINKING],
        ),
    ];
    for f in FAULT_MODELS {
        v.push(m(&format!("{f}:latest"), "llama", "3.2B", &["completion"]));
    }
    for f in TOOL_FAULT_MODELS {
        v.push(m(
            &format!("{f}:latest"),
            "qwen2",
            "7.6B",
            &["completion", CAP_TOOLS],
        ));
    }
    v
}

/// Ollama's short normalised form: strip the default registry/namespace, add `:latest`.
pub fn normalize(name: &str) -> String {
    let n = name.strip_prefix("registry.ollama.ai/").unwrap_or(name);
    let n = n.strip_prefix("library/").unwrap_or(n);
    let last = n.rsplit('/').next().unwrap_or(n);
    if last.contains(':') {
        n.to_owned()
    } else {
        format!("{n}:latest")
    }
}

impl Shared {
    pub fn find_model(&self, name: &str) -> Option<Model> {
        let n = normalize(name);
        crate::lock(&self.models)
            .iter()
            .find(|m| m.name == n)
            .cloned()
    }
}

pub async fn root() -> Response {
    respond(200, wire::TEXT_UTF8, "Ollama is running")
}

pub async fn version(State(st): State<Arc<Shared>>) -> Response {
    respond(200, JSON_UTF8, st.version_body.clone())
}

fn tag_entry(m: &Model) -> Value {
    json!({ "name": m.name, "model": m.name, "modified_at": MODIFIED_AT, "size": m.size(),
        "digest": m.digest(), "details": m.details(), "capabilities": m.capabilities })
}

pub async fn tags(State(st): State<Arc<Shared>>) -> Response {
    let models: Vec<Value> = crate::lock(&st.models).iter().map(tag_entry).collect();
    let r = respond(200, JSON_UTF8, go_json(&json!({ "models": models })));
    crate::faults::listing(st.listing_fault, r).await
}

pub async fn ps(State(st): State<Arc<Shared>>) -> Response {
    let r = respond(200, JSON_UTF8, go_json(&json!({ "models": loaded(&st) })));
    crate::faults::listing(st.listing_fault, r).await
}

/// The `/api/ps` entries: the builder's `loaded` list, else the first model.
fn loaded(st: &Shared) -> Vec<Value> {
    let expires = wire::go_time(time::OffsetDateTime::now_utc() + time::Duration::minutes(5));
    let catalog = crate::lock(&st.models);
    let loaded: Vec<&Model> = match &st.loaded {
        Some(names) => catalog.iter().filter(|m| names.contains(&m.name)).collect(),
        None => catalog.iter().take(1).collect(),
    };
    loaded
        .into_iter()
        .map(|m| {
            json!({ "name": m.name, "model": m.name, "size": 3_529_285_632u64, "digest": m.digest(),
                "details": m.details(), "expires_at": expires, "size_vram": 3_529_285_632u64,
                "context_length": 4096 })
        })
        .collect()
}

pub fn openai_models(st: &Shared) -> Vec<Value> {
    crate::lock(&st.models).iter().map(openai_model).collect()
}

pub fn openai_model(m: &Model) -> Value {
    json!({ "id": m.name, "object": "model", "created": MODIFIED_UNIX, "owned_by": "library" })
}

pub async fn show(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let v = match wire::parse_body(&body, "ShowRequest") {
        Ok(v) => v,
        Err(e) => return e.native(false),
    };
    let name = v
        .get("model")
        .or_else(|| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        return ApiError::new(400, "model is required").native(false);
    }
    let Some(m) = st.find_model(name) else {
        return ApiError::new(404, format!("model '{}' not found", normalize(name))).native(false);
    };
    let arch = m.family;
    let modelfile = format!(
        "# Modelfile generated by \"ollama show\"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM {}\n\nFROM /root/.ollama/models/blobs/sha256-{}\nTEMPLATE \"\"\"{{{{ .Prompt }}}}\"\"\"\nPARAMETER stop <|eot_id|>\n",
        m.name,
        m.digest()
    );
    let mut info = serde_json::Map::new();
    info.insert("general.architecture".into(), json!(arch));
    info.insert("general.file_type".into(), json!(15));
    info.insert("general.parameter_count".into(), json!(3_212_749_888u64));
    info.insert("general.quantization_version".into(), json!(2));
    info.insert(format!("{arch}.context_length"), json!(131_072));
    info.insert(format!("{arch}.embedding_length"), json!(3072));
    info.insert(format!("{arch}.block_count"), json!(28));
    info.insert("tokenizer.ggml.model".into(), json!("gpt2"));
    info.insert("tokenizer.ggml.tokens".into(), json!([]));
    let out = json!({
        "license": "LLAMA 3.2 COMMUNITY LICENSE AGREEMENT",
        "modelfile": modelfile,
        "parameters": "stop                           \"<|eot_id|>\"",
        "template": "{{ .Prompt }}",
        "details": m.details(),
        "model_info": info,
        "capabilities": m.capabilities,
        "modified_at": MODIFIED_AT,
    });
    respond(200, JSON_UTF8, go_json(&out))
}
