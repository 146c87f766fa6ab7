//! Model globs: which model names a `models.<glob>` key or an API key's
//! `models` list matches.
//!
//! Names are matched after [`normalize_model_name`] (Ollama treats `gemma3`,
//! `gemma3:latest`, `registry.ollama.ai/library/gemma3` and `GEMMA3` as the
//! same model), so `gemma3:*` matches all of them; matching ignores case.
//! A pattern with no glob characters and no tag is normalized the same way,
//! so the pattern `gemma3` matches `gemma3` and `gemma3:latest` but not
//! `gemma3:27b`. `*` also matches `/`, so `*` matches `hf.co/org/model:q4`.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

pub use crate::wire::normalize_model_name;

/// Normalize a glob the way model names are normalized. A pattern with
/// glob characters is lowercased and loses a default host and namespace
/// prefix (`registry.ollama.ai/library/gemma3:*` is `gemma3:*`), since the
/// names it is matched against have lost theirs.
fn normalize_pattern(pattern: &str) -> String {
    if !pattern.contains(['*', '?', '[', '{']) {
        return normalize_model_name(pattern);
    }
    let mut p = pattern.trim().to_lowercase();
    for prefix in [
        "registry.ollama.ai/library/",
        "registry.ollama.ai/",
        "library/",
    ] {
        if let Some(rest) = p.strip_prefix(prefix) {
            p = rest.to_string();
            break;
        }
    }
    p
}

fn glob(pattern: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(&normalize_pattern(pattern))
        .literal_separator(false)
        .case_insensitive(true)
        .build()
        .map_err(|e| format!("invalid glob: {}", e.kind()))
}

/// One checked model glob; the policy's `ModelRules` match all of its
/// globs at once.
#[derive(Debug, Clone)]
pub struct ModelGlob {
    pattern: String,
    glob: globset::Glob,
}

impl ModelGlob {
    /// Check `pattern`; the error text names the problem.
    pub fn new(pattern: &str) -> Result<Self, String> {
        Ok(Self {
            pattern: pattern.to_string(),
            glob: glob(pattern)?,
        })
    }

    /// The pattern as written in the policy.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The compiled glob.
    pub(super) fn glob(&self) -> &globset::Glob {
        &self.glob
    }
}

/// A list of model globs, e.g. an API key's allowed models; empty = all.
#[derive(Debug, Clone, Default)]
pub struct ModelGlobs {
    patterns: Vec<String>,
    set: Option<GlobSet>,
}

impl PartialEq for ModelGlobs {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl ModelGlobs {
    /// Compile `patterns`; the error names the first bad one.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        if patterns.is_empty() {
            return Ok(Self::default());
        }
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            builder.add(glob(p).map_err(|e| format!("{p:?}: {e}"))?);
        }
        let set = builder.build().map_err(|e| e.to_string())?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set: Some(set),
        })
    }

    /// Whether `model` (as the client wrote it) is allowed.
    pub fn allows(&self, model: &str) -> bool {
        self.allows_normalized(&normalize_model_name(model))
    }

    /// Whether an already normalized model name is allowed.
    pub fn allows_normalized(&self, normalized: &str) -> bool {
        match &self.set {
            None => true,
            Some(set) => set.is_match(normalized),
        }
    }
}
