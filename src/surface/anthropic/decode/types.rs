//! The Go types of `MessagesRequest`, as far as their decoding errors go:
//! each struct's Go name and its fields' JSON names and types.

/// `jsonparser.MalformedObjectError`: what Ollama's ordered maps (tool
/// arguments, tool properties) answer for anything but an object.
pub(super) const MALFORMED_OBJECT: &str =
    "Value looks like object, but can't find closing '}' symbol";

/// `MessageParam.UnmarshalJSON` first decodes into this anonymous struct.
pub(super) const RAW_MESSAGE: &str = "struct { Role string \"json:\\\"role\\\"\"; Content json.RawMessage \"json:\\\"content\\\"\" }";

/// A Go type, as far as its decoding errors go.
#[derive(Clone, Copy)]
pub(super) enum Ty {
    Str,
    Int,
    F64,
    Bool,
    Any,
    Slice(&'static Ty, &'static str),
    Struct(&'static Fields),
    /// `MessageParam` (custom `UnmarshalJSON`).
    Message,
    /// `api.ToolCallFunctionArguments` (an ordered map).
    Args,
    /// `api.PropertyType` (a string or a list of strings).
    PropType,
    /// `*api.ToolPropertiesMap` (an ordered map of `ToolProperty`).
    Props,
}

impl Ty {
    pub(super) fn go_name(self) -> &'static str {
        match self {
            Ty::Str => "string",
            Ty::Int => "int",
            Ty::F64 => "float64",
            Ty::Bool => "bool",
            Ty::Slice(_, name) => name,
            Ty::Struct(s) => s.go,
            Ty::Any | Ty::Message | Ty::Args | Ty::PropType | Ty::Props => "",
        }
    }
}

pub(super) struct Fields {
    pub(super) name: &'static str,
    pub(super) go: &'static str,
    pub(super) fields: &'static [(&'static str, Ty)],
}

pub(super) const STRINGS: Ty = Ty::Slice(&Ty::Str, "[]string");

pub(super) static REQUEST: Fields = Fields {
    name: "MessagesRequest",
    go: "anthropic.MessagesRequest",
    fields: &[
        ("model", Ty::Str),
        ("max_tokens", Ty::Int),
        (
            "messages",
            Ty::Slice(&Ty::Message, "[]anthropic.MessageParam"),
        ),
        ("system", Ty::Any),
        ("stream", Ty::Bool),
        ("temperature", Ty::F64),
        ("top_p", Ty::F64),
        ("top_k", Ty::Int),
        ("stop_sequences", STRINGS),
        ("tools", Ty::Slice(&TOOL, "[]anthropic.Tool")),
        ("tool_choice", Ty::Struct(&TOOL_CHOICE)),
        ("thinking", Ty::Struct(&THINKING)),
        ("metadata", Ty::Struct(&METADATA)),
        ("output_config", Ty::Struct(&OUTPUT_CONFIG)),
    ],
};

pub(super) static TOOL: Ty = Ty::Struct(&TOOL_FIELDS);
pub(super) static TOOL_FIELDS: Fields = Fields {
    name: "Tool",
    go: "anthropic.Tool",
    fields: &[
        ("type", Ty::Str),
        ("name", Ty::Str),
        ("description", Ty::Str),
        ("input_schema", Ty::Any),
        ("max_uses", Ty::Int),
    ],
};

pub(super) static TOOL_CHOICE: Fields = Fields {
    name: "ToolChoice",
    go: "anthropic.ToolChoice",
    fields: &[
        ("type", Ty::Str),
        ("name", Ty::Str),
        ("disable_parallel_tool_use", Ty::Bool),
    ],
};

pub(super) static THINKING: Fields = Fields {
    name: "ThinkingConfig",
    go: "anthropic.ThinkingConfig",
    fields: &[("type", Ty::Str), ("budget_tokens", Ty::Int)],
};

pub(super) static METADATA: Fields = Fields {
    name: "Metadata",
    go: "anthropic.Metadata",
    fields: &[("user_id", Ty::Str)],
};

pub(super) static OUTPUT_CONFIG: Fields = Fields {
    name: "OutputConfig",
    go: "anthropic.OutputConfig",
    fields: &[("effort", Ty::Str)],
};

pub(super) static BLOCK: Ty = Ty::Struct(&BLOCK_FIELDS);
pub(super) static BLOCK_FIELDS: Fields = Fields {
    name: "ContentBlock",
    go: "anthropic.ContentBlock",
    fields: &[
        ("type", Ty::Str),
        ("text", Ty::Str),
        ("citations", Ty::Slice(&CITATION, "[]anthropic.Citation")),
        ("source", Ty::Struct(&IMAGE_SOURCE)),
        ("id", Ty::Str),
        ("name", Ty::Str),
        ("input", Ty::Args),
        ("tool_use_id", Ty::Str),
        ("content", Ty::Any),
        ("is_error", Ty::Bool),
        ("thinking", Ty::Str),
        ("signature", Ty::Str),
    ],
};

pub(super) static CITATION: Ty = Ty::Struct(&CITATION_FIELDS);
pub(super) static CITATION_FIELDS: Fields = Fields {
    name: "Citation",
    go: "anthropic.Citation",
    fields: &[
        ("type", Ty::Str),
        ("url", Ty::Str),
        ("title", Ty::Str),
        ("encrypted_index", Ty::Str),
        ("cited_text", Ty::Str),
    ],
};

pub(super) static IMAGE_SOURCE: Fields = Fields {
    name: "ImageSource",
    go: "anthropic.ImageSource",
    fields: &[
        ("type", Ty::Str),
        ("media_type", Ty::Str),
        ("data", Ty::Str),
        ("url", Ty::Str),
    ],
};

pub(super) static TOOL_PARAMS: Fields = Fields {
    name: "ToolFunctionParameters",
    go: "api.ToolFunctionParameters",
    fields: &[
        ("type", Ty::Str),
        ("$defs", Ty::Any),
        ("items", Ty::Any),
        ("required", STRINGS),
        ("properties", Ty::Props),
    ],
};

pub(super) static TOOL_PROPERTY: Ty = Ty::Struct(&TOOL_PROPERTY_FIELDS);
pub(super) static TOOL_PROPERTY_FIELDS: Fields = Fields {
    name: "ToolProperty",
    go: "api.ToolProperty",
    fields: &[
        ("anyOf", Ty::Slice(&TOOL_PROPERTY, "[]api.ToolProperty")),
        ("type", Ty::PropType),
        ("items", Ty::Any),
        ("description", Ty::Str),
        ("enum", Ty::Slice(&Ty::Any, "[]interface {}")),
        ("properties", Ty::Props),
        ("required", STRINGS),
    ],
};
