"""An Ollama-compatible HTTP front for llama.cpp's llama-server (stdlib only).

Since 0.30, Ollama runs llama-server as its engine and puts a Go HTTP front in
front of it. This package plays that front for a single GGUF model (under a
second, tool-capable name with --tools-model), so that
clients and proxies can be tested against real inference without Ollama.
It follows Ollama 0.32.x (read from its source: server/routes.go,
llm/llama_server.go, middleware/openai.go, openai/openai.go, api/types.go) on
the rendered-prompt path that the `gemma3` library models use. README.md
beside this file says what it imitates and what it does not.

Modules, in the order a request meets them:

* server       the HTTP layer and routing (gin's behaviour), the command line
* decode       request bodies, with encoding/json's error texts
* openai_chat  /v1/chat/completions <-> an Ollama chat request and its chunks
* responses    /v1/responses <-> an Ollama chat request; response object and events
* messages     /v1/messages (Anthropic) <-> an Ollama chat request; message and events
* handlers     ChatHandler and GenerateHandler: model checks, capability
               refusals (tools, thinking), prompt, chunks; also show and ps
* prompt       message collation and the gemma3 template
* tools        the tools model's template and Ollama's tool-call parser
* llama        options and the llama-server /completion call
* logprobs     llama-server's token probabilities as Ollama's logprobs
* model        the served model's name, GGUF metadata and Modelfile
* gojson       Go-compatible JSON, float and time encoding
* errors       HTTPFail and each surface's error body

Run it with `python -m ollama_front --llama-url URL` (with this package's
parent folder on PYTHONPATH) or `python path/to/ollama_front --llama-url URL`.
"""

VERSION = "0.32.15"
