//! What a schema may measure ([`Limits`]), what it measured ([`Report`])
//! and which limit it exceeds ([`BudgetError`]).

/// How large a schema may be. [`Limits::default`] fits every real schema
/// seen in practice with a wide margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// JSON values in the whole document (keys not counted).
    pub max_nodes: usize,
    /// Bytes of JSON text, about as serialized compactly.
    pub max_bytes: usize,
    /// Sub-schemas nested in one another, `$ref` hops included.
    pub max_depth: usize,
    /// Sub-schemas once every `$ref` is expanded.
    pub max_expanded: usize,
    /// Cost of one `pattern` (about the states of its compiled automaton).
    pub max_pattern_cost: u64,
    /// Cost of all patterns of the schema together.
    pub max_patterns_cost: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_nodes: 50_000,
            max_bytes: 512 * 1024,
            max_depth: 64,
            max_expanded: 20_000,
            max_pattern_cost: 10_000,
            max_patterns_cost: 50_000,
        }
    }
}

impl Limits {
    /// The limits for the tools of one request taken together: four times
    /// those of one schema.
    pub fn for_tool_set(&self) -> Limits {
        Limits {
            max_nodes: self.max_nodes.saturating_mul(4),
            max_bytes: self.max_bytes.saturating_mul(4),
            max_expanded: self.max_expanded.saturating_mul(4),
            max_patterns_cost: self.max_patterns_cost.saturating_mul(4),
            ..*self
        }
    }
}

/// What [`check`] measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// JSON values in the document.
    pub nodes: usize,
    /// Bytes of JSON text (compact).
    pub bytes: usize,
    /// Deepest sub-schema nesting, `$ref` hops included.
    pub depth: usize,
    /// Sub-schemas once every `$ref` is expanded.
    pub expanded: usize,
    /// Number of regular expressions (`pattern`, `patternProperties` keys).
    pub patterns: usize,
    /// Their total cost (see [`pattern_cost`]).
    pub pattern_cost: u64,
    /// Whether some `$ref` cycle makes the schema recursive.
    pub recursive: bool,
}

impl Report {
    /// `self` plus `other`, for a set of schemas checked one by one.
    pub fn add(&mut self, other: &Report) {
        self.nodes += other.nodes;
        self.bytes += other.bytes;
        self.depth = self.depth.max(other.depth);
        self.expanded += other.expanded;
        self.patterns += other.patterns;
        self.pattern_cost = self.pattern_cost.saturating_add(other.pattern_cost);
        self.recursive |= other.recursive;
    }

    /// The first limit of `limits` this (summed) report exceeds.
    pub fn within(&self, limits: &Limits) -> Result<(), BudgetError> {
        if self.nodes > limits.max_nodes {
            return Err(BudgetError::TooManyNodes {
                limit: limits.max_nodes,
            });
        }
        if self.bytes > limits.max_bytes {
            return Err(BudgetError::TooManyBytes {
                limit: limits.max_bytes,
            });
        }
        if self.expanded > limits.max_expanded {
            return Err(BudgetError::TooExpanded {
                limit: limits.max_expanded,
            });
        }
        if self.pattern_cost > limits.max_patterns_cost {
            return Err(BudgetError::PatternsTooCostly {
                limit: limits.max_patterns_cost,
            });
        }
        Ok(())
    }
}

/// Which limit a schema exceeds, or why it cannot be measured. The text
/// follows "`<what>` schema", e.g. "format schema too large: …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("too large: more than {limit} JSON values (limit)")]
    TooManyNodes { limit: usize },
    #[error("too large: more than {limit} bytes (limit)")]
    TooManyBytes { limit: usize },
    #[error("too large: expands to more than {limit} sub-schemas (limit)")]
    TooExpanded { limit: usize },
    #[error("too deeply nested: more than {limit} levels at {at} (limit)")]
    TooDeep { limit: usize, at: String },
    #[error(
        "too complex: the pattern at {at} expands to more than {limit} automaton states (limit)"
    )]
    PatternTooCostly { limit: u64, at: String },
    #[error("too complex: its patterns expand to more than {limit} automaton states (limit)")]
    PatternsTooCostly { limit: u64 },
    #[error("invalid: $ref {reference:?} at {at} resolves to nothing in the schema")]
    Unresolvable { reference: String, at: String },
    #[error("invalid: the $ref cycle through {at} never descends into the value")]
    EmptyCycle { at: String },
    #[error(
        "too complex: at {at} two alternatives recurse into the same part of the value, \
         which makes validation exponential"
    )]
    OverlappingRecursion { at: String },
}

/// `at` as shown in messages: "/" for the root.
pub(super) fn show_pointer(at: &str) -> String {
    if at.is_empty() {
        "/".to_string()
    } else {
        at.to_string()
    }
}
