"""The one model the front serves: its name, its GGUF metadata, its Modelfile.

Gemma 3's library entry in Ollama carries the chat TEMPLATE and PARAMETERs
below; the GGUF file (read here as Ollama's ggml.Decode reads it) supplies
/api/show's model_info and tensors and /api/tags' details.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import struct
import time
from typing import Any

from .gojson import GoFloat32, go_float32, go_time
from .tools import TOOLS_MODEL_PARAMS, TOOLS_TEMPLATE

TEMPLATE = """{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if or (eq .Role "user") (eq .Role "system") }}<start_of_turn>user
{{ .Content }}<end_of_turn>
{{ if $last }}<start_of_turn>model
{{ end }}
{{- else if eq .Role "assistant" }}<start_of_turn>model
{{ .Content }}{{ if not $last }}<end_of_turn>
{{ end }}
{{- end }}
{{- end }}"""
MODEL_PARAMS = {"stop": ["<end_of_turn>"], "temperature": 1, "top_k": 64, "top_p": 0.95}

GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
TENSOR_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
                10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 24: "I8",
                25: "I16", 26: "I32", 27: "I64", 28: "F64", 30: "BF16"}
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


def read_gguf(path: str, arrays: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """GGUF metadata as Ollama's ggml.Decode reads it: (kv, tensors).

    Without `arrays`, non-empty arrays read as None (JSON null), as in a
    non-verbose /api/show; with it they are read whole."""
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        pos = 0

        def rd(fmt: str) -> Any:
            nonlocal pos
            v = struct.unpack_from(fmt, buf, pos)[0]
            pos += struct.calcsize(fmt)
            return v

        def rstr() -> str:
            nonlocal pos
            n = rd("<Q")
            pos += n
            return bytes(buf[pos - n:pos]).decode("utf-8", errors="replace")

        def rval(t: int) -> Any:
            nonlocal pos
            if t == 8:
                return rstr()
            if t == 9:
                et, count = rd("<I"), rd("<Q")
                if arrays or count == 0:
                    return [rval(et) for _ in range(count)]
                if et == 8:
                    for _ in range(count):
                        pos += 8 + struct.unpack_from("<Q", buf, pos)[0]
                else:
                    pos += count * struct.calcsize(GGUF_SCALARS[et])
                return None
            v = rd(GGUF_SCALARS[t])
            return GoFloat32(go_float32(v)) if t == 6 else v

        if buf[:4] != b"GGUF":
            raise ValueError("%s is not a GGUF file" % path)
        pos = 8
        n_tensors, n_kv = rd("<Q"), rd("<Q")
        kv = {}
        for _ in range(n_kv):
            key = rstr()
            kv[key] = rval(rd("<I"))
        tensors, params = [], 0
        for _ in range(n_tensors):
            name = rstr()
            shape = [rd("<Q") for _ in range(rd("<I"))]
            kind = rd("<I")
            rd("<Q")
            tensors.append({"name": name, "type": TENSOR_TYPES.get(kind, str(kind)), "shape": shape})
            count = 1
            for d in shape:
                count *= d
            params += count
        kv["general.parameter_count"] = params
        return kv, tensors
    finally:
        buf.close()


def human_number(b: int) -> str:
    """format.HumanNumber: 268098176 is \"268.10M\"."""
    if b >= 1_000_000_000:
        x = b / 1e9
        return "%.0fB" % x if x == int(x) else "%.1fB" % x
    if b >= 1_000_000:
        x = b / 1e6
        return "%.0fM" % x if x == int(x) else "%.2fM" % x
    return "%.0fK" % (b / 1e3) if b >= 1000 else str(b)


NAME_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}")


def parse_name(s: str) -> tuple[str, str, str, str] | None:
    """types/model.ParseName with Ollama's defaults; None when the name is invalid."""
    s = s.split("@", 1)[0]
    head, sep, tag = s.rpartition(":")
    if not sep or "/" in tag:
        head, tag = s, "latest"
    parts = head.split("/")
    if len(parts) > 3:
        return None
    parts = ["registry.ollama.ai", "library"][: 3 - len(parts)] + parts
    host, ns, model = parts
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,349}", host) or not all(
            NAME_PART.fullmatch(p) for p in (ns, model, tag)):
        return None
    return host, ns, model, tag


def display_shortest(name: tuple[str, str, str, str]) -> str:
    """model.Name.DisplayShortest."""
    host, ns, model, tag = name
    if host.lower() != "registry.ollama.ai":
        return "%s/%s/%s:%s" % name
    return ("%s:%s" % (model, tag)) if ns.lower() == "library" else "%s/%s:%s" % (ns, model, tag)


class Model:
    """The served model: name, GGUF metadata, list entry and /api/show answer."""

    def __init__(self, name: str, gguf: str | None, tools: bool = False) -> None:
        self.name = name
        self.tools = tools  # served with TOOLS_TEMPLATE: tools declared in the prompt, calls parsed
        self.template = TOOLS_TEMPLATE if tools else TEMPLATE
        self.params = TOOLS_MODEL_PARAMS if tools else MODEL_PARAMS
        self.parsed = parse_name(name)
        self.full_name = "%s/%s/%s:%s" % self.parsed
        self.gguf = gguf
        self.kv, self.tensors = read_gguf(gguf) if gguf else ({}, [])
        st = os.stat(gguf) if gguf else None
        self.size = st.st_size if st else 0
        self.modified_ns = st.st_mtime_ns if st else time.time_ns()
        self.digest = hashlib.sha256(("%s %s %d" % (name, gguf, self.size)).encode()).hexdigest()
        arch = self.kv.get("general.architecture", "gemma3")
        self.details = {"parent_model": "", "format": "gguf", "family": arch, "families": [arch],
                        "parameter_size": human_number(self.kv.get("general.parameter_count", 0)),
                        "quantization_level": FILE_TYPES.get(self.kv.get("general.file_type"), "unknown")}

    def capabilities(self) -> list[str]:
        return ["completion", "tools"] if self.tools else ["completion"]

    def matches(self, name: tuple[str, str, str, str] | None) -> bool:
        return name is not None and tuple(p.lower() for p in name) == tuple(p.lower() for p in self.parsed)

    def list_entry(self, with_caps: bool = True) -> dict[str, Any]:
        e = {"name": self.name, "model": self.name, "modified_at": go_time(self.modified_ns, utc=False),
             "size": self.size, "digest": self.digest, "details": self.details}
        if with_caps:
            e["capabilities"] = self.capabilities()
        return e

    def show(self, verbose: bool) -> dict[str, Any]:
        kv = read_gguf(self.gguf, arrays=True)[0] if verbose and self.gguf else self.kv
        info = {k: v for k, v in kv.items() if k not in ("general.name", "tokenizer.chat_template")}
        params = "\n".join("%-30s %s" % (k, json.dumps(v)) for k, vs in sorted(self.params.items())
                           for v in (vs if isinstance(vs, list) else [vs]))
        modelfile = ('# Modelfile generated by "ollama show"\n# To build a new Modelfile based on this, replace '
                     'FROM with:\n# FROM %s\n\nFROM %s\nTEMPLATE """%s"""\n' % (self.name, self.gguf, self.template)
                     + "".join("PARAMETER %s %s\n" % (k, v) for k, vs in sorted(self.params.items())
                               for v in (vs if isinstance(vs, list) else [vs])))
        return {"modelfile": modelfile, "parameters": params, "template": self.template, "details": self.details,
                "model_info": dict(sorted(info.items())), "tensors": self.tensors,
                "capabilities": self.capabilities(), "modified_at": go_time(self.modified_ns, utc=False)}

