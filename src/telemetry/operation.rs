//! The GenAI operation a route performs (`chat`, `text_completion`,
//! `embeddings`), as the OpenTelemetry GenAI conventions name it.

/// The GenAI operation of a route's metric label (`None`: not a model
/// call, no GenAI metrics).
pub(crate) fn operation(route: &str) -> Option<&'static str> {
    Some(match route {
        "/api/chat" | "/v1/chat/completions" | "/v1/messages" | "/v1/responses" => "chat",
        "/api/generate" | "/v1/completions" => "text_completion",
        "/api/embed" | "/api/embeddings" | "/v1/embeddings" => "embeddings",
        _ => return None,
    })
}
