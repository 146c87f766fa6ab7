"""Native tool calls for the tool-capable model name (`--tools-model`).

Ollama serves a model as tool-capable when its chat TEMPLATE uses `.Tools`;
the rendered prompt then declares the request's tools, and the model's text
is read by Ollama's generic tool parser (tools/tools.go), whose tag is the
first text after `.ToolCalls` in the template (here `<tool_call>`). This
module holds that template, its rendering in Python, and a port of the
parser:

- text before the tag is content; from the tag on, text is buffered and
  each JSON object naming a declared tool, with `arguments` (or
  `parameters`) as an object, becomes one `tool_calls` entry the moment it
  is complete (a stream sends it as one chunk);
- after the tag, text that is no call to a declared tool (an undeclared
  name, arguments cut off) is never returned: the answer ends with no call
  and no content, as Ollama's does;
- a call written without the tag (a bare JSON object, a code fence, a
  Python-looking call) stays in `content` as the model wrote it.
"""

from __future__ import annotations

import json
import random
from typing import Any

TOOLS_TEMPLATE = """{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if and $.Tools (eq $i 0) }}<start_of_turn>user
Tools:
{{- range $.Tools }}
{{ . }}
{{- end }}

To call a tool, answer with <tool_call>, the call as JSON, and </tool_call>.<end_of_turn>
<start_of_turn>user
Turn on the kitchen lights.<end_of_turn>
<start_of_turn>model
<tool_call>
{"name": "set_light", "arguments": {"room": "kitchen", "on": true}}
</tool_call><end_of_turn>
{{ end }}
{{- if or (eq .Role "user") (eq .Role "system") }}<start_of_turn>user
{{ .Content }}<end_of_turn>
{{ if $last }}<start_of_turn>model
{{ end }}
{{- else if eq .Role "assistant" }}<start_of_turn>model
{{- if .Content }}
{{ .Content }}
{{- end }}
{{- if .ToolCalls }}
<tool_call>
{{- range .ToolCalls }}
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
{{- end }}
</tool_call>
{{- end }}{{ if not $last }}<end_of_turn>
{{ end }}
{{- else if eq .Role "tool" }}<start_of_turn>user
<tool_response>
{{ .Content }}
</tool_response><end_of_turn>
{{ if $last }}<start_of_turn>model
{{ end }}
{{- end }}
{{- end }}"""
# The one-shot example: the 270M base model has no tool training and, told the
# form alone, repeats the prompt; shown one exchange it writes tagged calls
# (often copying the example's undeclared tool, which Ollama's parser then
# swallows: a lost call). Its tool is not among the request's.
EXAMPLE = ("<start_of_turn>user\nTurn on the kitchen lights.<end_of_turn>\n<start_of_turn>model\n<tool_call>\n"
           '{"name": "set_light", "arguments": {"room": "kitchen", "on": true}}\n</tool_call><end_of_turn>\n')
# The tools model's PARAMETERs: gemma3's, and a stop at the end of a call block
# (the model rarely ends its turn after one; every call of a turn goes in one block).
TOOLS_MODEL_PARAMS = {"stop": ["<end_of_turn>", "</tool_call>"], "temperature": 1, "top_k": 64, "top_p": 0.95}

# tools.parseTag(TOOLS_TEMPLATE): the first text after `.ToolCalls`, cut at "{", trimmed.
TAG = "<tool_call>"


def go_compact(v: Any) -> str:
    """encoding/json's compact form (HTML-safe escapes, as json.Marshal writes them)."""
    s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def tool_string(t: dict[str, Any]) -> str:
    """A tool as the template prints it (api.Tool's JSON: type, then function)."""
    fn = t.get("function") or {}
    out_fn: dict[str, Any] = {"name": fn.get("name") or ""}
    if fn.get("description"):
        out_fn["description"] = fn["description"]
    out_fn["parameters"] = fn.get("parameters") or {"type": "", "properties": None}
    return go_compact({"type": t.get("type") or "function", "function": out_fn})


def _args(a: Any) -> Any:
    if isinstance(a, str):  # a client sent arguments as a JSON string
        try:
            return json.loads(a)
        except ValueError:
            return a
    return a if a is not None else {}


def collate(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """template.collate: consecutive messages of one role (not tool) share the first one's fields."""
    out: list[dict[str, Any]] = []
    for m in msgs:
        if out and out[-1]["role"] == m["role"] and m["role"] != "tool":
            out[-1] = dict(out[-1], content=(out[-1].get("content") or "") + "\n\n" + (m.get("content") or ""))
        else:
            out.append(dict(m, content=m.get("content") or ""))
    return out


def render(msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """TOOLS_TEMPLATE applied to Ollama's collated messages."""
    msgs = collate(msgs)
    out = []
    for i, m in enumerate(msgs):
        last = i == len(msgs) - 1
        if tools and i == 0:
            out.append("<start_of_turn>user\nTools:")
            out.extend("\n" + tool_string(t) for t in tools)
            out.append("\n\nTo call a tool, answer with <tool_call>, the call as JSON, and </tool_call>.<end_of_turn>\n")
            out.append(EXAMPLE)
        role = m["role"]
        if role in ("user", "system"):
            out.append("<start_of_turn>user\n%s<end_of_turn>\n" % m["content"])
            if last:
                out.append("<start_of_turn>model\n")
        elif role == "assistant":
            out.append("<start_of_turn>model")
            if m["content"]:
                out.append("\n" + m["content"])
            calls = m.get("tool_calls") or []
            if calls:
                out.append("\n<tool_call>")
                for c in calls:
                    fn = c.get("function") or {}
                    out.append('\n{"name": "%s", "arguments": %s}' % (fn.get("name") or "",
                                                                     go_compact(_args(fn.get("arguments")))))
                out.append("\n</tool_call>")
            if not last:
                out.append("<end_of_turn>\n")
        elif role == "tool":
            out.append("<start_of_turn>user\n<tool_response>\n%s\n</tool_response><end_of_turn>\n" % m["content"])
            if last:
                out.append("<start_of_turn>model\n")
    return "".join(out)


def call_id() -> str:
    """server.toolCallId: call_ and 8 random lowercase letters or digits."""
    return "call_" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))


class Parser:
    """tools.Parser (Ollama's generic tool-call parser) with a fixed tag."""

    LOOKING, CALLING, DONE = range(3)

    def __init__(self, tools: list[dict[str, Any]], tag: str = TAG) -> None:
        self.tag = tag
        self.names = [((t or {}).get("function") or {}).get("name") or "" for t in tools]
        self.state = self.LOOKING
        self.buffer = ""
        self.n = 0

    def add(self, s: str) -> tuple[list[dict[str, Any]], str]:
        """Parser.Add: (calls, content) for one piece of the model's text."""
        if self.state == self.DONE:
            return [], s
        self.buffer += s
        content = ""
        if self.state == self.LOOKING:
            i, found = self._find_tag()
            if i == -1:
                content, self.buffer = self.buffer, ""
            else:
                content, self.buffer = self.buffer[:i], self.buffer[i:]
            if self.tag in ("{", "[") and content.strip() != "":
                self.state = self.DONE
                return [], content + self.buffer
            if not found:
                return [], content
            self.state = self.CALLING
        calls = []
        while True:
            call = self._parse_call()
            if call is None:
                break
            calls.append(call)
        if self._done():
            self.state = self.DONE
            content, self.buffer = self.buffer, ""
        return calls, content

    def content(self) -> str:
        """Parser.Content: what is left for the user when the answer ends."""
        if self.n > 0:
            return ""
        return self.buffer if self.tag in ("{", "[") else ""

    def _find_tag(self) -> tuple[int, bool]:
        i = self.buffer.find(self.tag)
        if i > -1:
            return i, True
        for k in range(min(len(self.buffer), len(self.tag)), 0, -1):
            if self.buffer.endswith(self.tag[:k]):
                return len(self.buffer) - k, False
        return -1, False

    def _find_tool(self) -> tuple[str | None, int]:
        buf = self.buffer
        if not buf:
            return None, 0
        longest = max(self.names, key=len, default="")
        for i in range(1, min(len(buf), len(longest)) + 1):
            tail = buf[len(buf) - i:]
            if any(len(tail) < len(n) and n.startswith(tail) for n in self.names):
                return None, 0
        found, start, end = None, -1, -1
        for n in self.names:
            pos = buf.find(n) if n else 0
            if not n or pos == -1:
                continue
            if start != -1 and (pos > start or pos == start and len(n) <= len(found or "")):
                continue
            found, start, end = n, pos, pos + len(n)
        return (found, end) if found is not None else (None, 0)

    def _find_arguments(self, name: str) -> tuple[dict[str, Any] | None, int]:
        buf = self.buffer
        start, braces, in_str, esc = -1, 0, False, False
        for i, c in enumerate(buf):
            if esc:
                esc = False
                continue
            if c == "\\":
                esc = True
                continue
            if c == '"':
                in_str = not in_str
                continue
            if in_str:
                continue
            if c == "{":
                if braces == 0:
                    start = i
                braces += 1
            elif c == "}":
                braces -= 1
                if braces == 0 and start != -1:
                    try:
                        data = json.loads(buf[start:i + 1])
                    except ValueError:
                        start = -1
                        continue
                    if not isinstance(data, dict):
                        start = -1
                        continue
                    args, found = _find_object(data, name)
                    return (args if found else data), i
                if braces < 0:
                    braces = 0
        return None, 0

    def _parse_call(self) -> dict[str, Any] | None:
        name, end = self._find_tool()
        if name is None:
            return None
        args, i = self._find_arguments(name)
        if args is None:
            return None
        end = max(end, i)
        call = {"function": {"index": self.n, "name": name, "arguments": args}}
        self.n += 1
        self.buffer = self.buffer[end:]
        return call

    def _done(self) -> bool:
        if self.tag not in ("{", "["):
            return False
        op, cl = self.tag, "}" if self.tag == "{" else "]"
        count, in_str, esc = 0, False, False
        for c in self.buffer:
            if esc:
                esc = False
                continue
            if c == "\\":
                esc = True
                continue
            if c == '"':
                in_str = not in_str
                continue
            if in_str:
                continue
            if c == op:
                count += 1
            elif c == cl:
                count -= 1
                if count == 0:
                    return True
        return False


def _find_map(key: str, obj: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    v = obj.get(key)
    if isinstance(v, dict):
        return v, True
    if isinstance(v, str):
        try:
            parsed = json.loads(v)
        except ValueError:
            return None, False
        if isinstance(parsed, dict):
            return parsed, True
        # Go: json.Unmarshal of a non-object into a map fails, so not found
    return None, False


def _find_object(obj: dict[str, Any], name: str) -> tuple[dict[str, Any] | None, bool]:
    """findArguments' findObject: the arguments of a {"name", "arguments"|"parameters"} object."""
    if "name" in obj:
        for key in ("arguments", "parameters"):
            args, ok = _find_map(key, obj)
            if ok:
                return args, True
        return None, True
    args, ok = _find_map(name, obj)
    if ok:
        return args, True
    for v in obj.values():
        if isinstance(v, dict):
            r, ok = _find_object(v, name)
            if ok:
                return r, True
        elif isinstance(v, list):
            for item in v:
                if isinstance(item, dict):
                    r, ok = _find_object(item, name)
                    if ok:
                        return r, True
    return None, False
