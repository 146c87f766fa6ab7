//! What makes a request's `tools` or `tool_choice` unusable: every such
//! problem is the client's, answered with HTTP 400.

/// A request-level problem with `tools` or `tool_choice`. Every variant is a
/// client error: answer HTTP 400 with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// `tools[index]` cannot be used.
    #[error("invalid tool at index {index}: {reason}")]
    InvalidTool { index: usize, reason: String },
    /// Two tools share a name.
    #[error("duplicate tool name {0:?}")]
    DuplicateName(String),
    /// `tool_choice` has a value that is not understood.
    #[error("invalid tool_choice: {0}")]
    InvalidToolChoice(String),
    /// `tool_choice` names a tool that is not declared.
    #[error("tool_choice names unknown tool {0:?}")]
    UnknownToolChoice(String),
    /// A tool's parameters schema exceeds the schema budget.
    #[error("tool {name:?} parameters schema {source}")]
    Schema {
        name: String,
        source: crate::validate::SchemaRejected,
    },
    /// The tools' parameters together exceed the tool-set budget.
    #[error("tools parameters schemas together {0}")]
    TooLarge(crate::schema::budget::BudgetError),
}
