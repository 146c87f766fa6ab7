"""The official Python clients over HTTPS: augur serves TLS with a
certificate from a CA made for the run, and each client trusts that CA
(an ssl context: httpx deprecates `verify=<path>`)."""
import socket
import ssl

import anthropic
import httpx
import ollama
import openai
import pytest


@pytest.fixture()
def ca(tls_stack):
    return ssl.create_default_context(cafile=tls_stack["ca"])


def test_tls_handshake_is_tls_1_3_with_http_1_1_by_alpn(tls_stack, ca):
    host, port = tls_stack["url"].removeprefix("https://").split(":")
    ca.set_alpn_protocols(["http/1.1"])
    with socket.create_connection((host, int(port))) as raw, ca.wrap_socket(raw, server_hostname=host) as s:
        assert s.version() == "TLSv1.3" and s.selected_alpn_protocol() == "http/1.1"


def test_tls_a_client_without_the_ca_is_refused(tls_stack):
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(tls_stack["url"] + "/api/version")


def test_tls_ollama_python(tls_stack, ca):
    client = ollama.Client(host=tls_stack["url"], verify=ca)
    assert "gemma3:latest" in [m.model for m in client.list().models]
    r = client.chat(model="gemma3", messages=[{"role": "user", "content": "hi"}])
    assert r.message.role == "assistant" and r.message.content and r.done
    parts = list(client.chat(model="gemma3", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert len(parts) > 2 and parts[-1].done
    assert "".join(p.message.content for p in parts) == r.message.content


def test_tls_openai_sdk(tls_stack, ca):
    client = openai.OpenAI(base_url=tls_stack["url"] + "/v1", api_key="ollama",
                           http_client=httpx.Client(verify=ca), max_retries=0)
    assert "gemma3:latest" in [m.id for m in client.models.list()]
    r = client.chat.completions.create(model="gemma3", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content
    chunks = list(client.chat.completions.create(model="gemma3", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_tls_anthropic_sdk(tls_stack, ca):
    # This SDK runs on its own fork of httpx (httpx2): its client class.
    client = anthropic.Anthropic(base_url=tls_stack["url"], api_key="unused",
                                 http_client=anthropic.DefaultHttpxClient(verify=ca), max_retries=0)
    m = client.messages.create(model="gemma3", max_tokens=32, messages=[{"role": "user", "content": "hi"}])
    assert m.type == "message" and m.content[0].type == "text" and m.content[0].text
    with client.messages.stream(model="gemma3", max_tokens=32, messages=[{"role": "user", "content": "hi"}]) as s:
        assert "".join(s.text_stream)
