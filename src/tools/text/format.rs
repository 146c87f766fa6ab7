//! The text forms augur can ask a model to write its calls in.

/// The text form augur asks a model to call tools in (policy
/// `tools.text_format`); every form is read whatever was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextFormat {
    /// `[get_weather(city="Paris")]`.
    #[default]
    Python,
    /// ```` ```tool_code ```` fence holding Python calls.
    ToolCode,
    /// `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    ToolCall,
    /// `[TOOL_REQUEST]{"name": …, "arguments": {…}}[END_TOOL_REQUEST]`.
    ToolRequest,
}

impl TextFormat {
    /// Every format with its policy name.
    pub const ALL: [(&'static str, TextFormat); 4] = [
        ("python", TextFormat::Python),
        ("tool_code", TextFormat::ToolCode),
        ("tool_call", TextFormat::ToolCall),
        ("tool_request", TextFormat::ToolRequest),
    ];

    /// The policy name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("python", |(n, _)| n)
    }
}
