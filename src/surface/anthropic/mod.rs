//! Anthropic's Messages API (`POST /v1/messages`), as Ollama serves it.
