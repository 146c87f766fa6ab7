//! OpenAI's Responses API (`POST /v1/responses`), as Ollama serves it.
