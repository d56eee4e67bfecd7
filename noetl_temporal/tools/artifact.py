"""``kind: artifact``: NoETL's artifact tool, ``action: get`` and ``action: put``, on local stores.

NoETL's own tool (noetl/tools/artifact/executor.py) is followed shape for shape:

* ``get`` reads ``result_ref`` (a stored result's reference: ``{{ start._ref }}``,
  ``{{ start }}`` or its ``noetl://`` string) or ``uri`` (a file: ``artifact://localfs/<path>``,
  ``file://<path>`` or a path; ``.gz`` is read gunzipped) and returns
  ``{status: "success", data: <the body>, uri, source | size_bytes, compressed}``: the body is
  under ``data``, as NoETL's ``{{ load.data }}`` reads it;
* ``put`` writes ``data`` as JSON to ``uri`` (gzip unless ``compress: false``, which adds
  ``.gz``) and returns ``{status, uri, size_bytes, sha256, compressed}`` (sha256 of the JSON
  before compression).

``s3://`` and ``gs://`` need a cloud account: refused at validation when written (NTL345,
``dsl/artifact_check.py``), here when a template renders one. docs/tools.md, "`artifact`".
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
from typing import Any

from ..errors import ToolConfigError, ToolError
from ..store import large_results
from ..tool_kinds.artifact import ARTIFACT, CLOUD_SCHEMES
from .base import ToolCall


def _setting(config: dict, *names: str) -> Any:
    """``names`` beside ``kind:``, else under ``args:`` or ``input:`` (NoETL reads all three)."""
    for place in (config, config.get("args"), config.get("input")):
        if isinstance(place, dict):
            for name in names:
                if place.get(name) not in (None, ""):
                    return place[name]
    return None


def local_path(uri: str) -> str:
    """The file an artifact URI names, as NoETL reads it (``artifact://localfs/x`` is ``/x``)."""
    scheme = uri.split("://", 1)[0] if "://" in uri else ""
    if scheme in CLOUD_SCHEMES:
        raise ToolConfigError(f"artifact uri {uri!r} is on {CLOUD_SCHEMES[scheme]}: artifacts are read and "
                              "written on the worker's file system here",
                              fix="write `uri: \"artifact://localfs/<path>\"` and copy the file to the bucket "
                                  "from a task (`gsutil cp`, `aws s3 cp`)")
    if uri.startswith("artifact://localfs/"):
        path = "/" + uri.removeprefix("artifact://localfs/")
    elif uri.startswith("artifact://"):
        path = uri.removeprefix("artifact://")
    elif uri.startswith("file://"):
        path = uri.removeprefix("file://")
    elif scheme:
        raise ToolConfigError(f"artifact uri {uri!r}: scheme {scheme!r} is not read here",
                              fix="write `artifact://localfs/<path>`, `file://<path>` or a path")
    else:
        path = uri
    return os.path.abspath(os.path.expanduser(path))


def _read_file(uri: str) -> dict[str, Any]:
    path = local_path(uri)
    if not os.path.isfile(path):
        raise ToolError(f"artifact file not found: {path}", kind="artifact",
                        fix="check the uri (a `put` adds `.gz` unless `compress: false`)")
    gzipped = path.endswith((".gz", ".gzip"))
    with (gzip.open(path, "rt", encoding="utf-8") if gzipped else open(path, encoding="utf-8")) as f:
        text = f.read()
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = text
    return {"status": "success", "data": data, "uri": uri, "size_bytes": os.path.getsize(path),
            "compressed": gzipped}


def _write_file(uri: str, data: Any, compress: bool) -> dict[str, Any]:
    path = local_path(uri)
    text = json.dumps(data, indent=2, default=str) if isinstance(data, dict | list) else str(data)
    sha256 = hashlib.sha256(text.encode()).hexdigest()
    suffixed = compress and not path.endswith(".gz")
    if suffixed:
        path += ".gz"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with (gzip.open(path, "wt", encoding="utf-8") if compress else open(path, "w", encoding="utf-8")) as f:
        f.write(text)
    # NoETL answers an `artifact://` uri as given; the file's own uri where `.gz` was added, so a
    # `get` of the answer finds the file
    written = uri if uri.startswith("artifact://") and not suffixed else f"artifact://localfs{path}"
    return {"status": "success", "uri": written, "size_bytes": os.path.getsize(path), "sha256": sha256,
            "compressed": compress}


async def _get(config: dict) -> dict[str, Any]:
    ref = _setting(config, "result_ref", "ref")
    uri = _setting(config, "uri")
    if isinstance(ref, dict) and large_results.is_ref(ref):
        return {"status": "success", "data": await large_results.aresolve_ref(ref), "uri": ref["ref"],
                "source": "result_store"}
    if isinstance(ref, str) and ref.startswith("noetl://"):
        return {"status": "success", "data": await large_results.aresolve_ref(ref), "uri": ref,
                "source": "result_store"}
    if uri is None and ref is not None and not isinstance(ref, str):
        # a value that is not a reference (a small result stayed inline): it is the body
        return {"status": "success", "data": await large_results.resolve_refs(ref), "uri": None,
                "source": "inline"}
    target = uri if uri is not None else ref
    if not isinstance(target, str):
        raise ToolConfigError("artifact get has no `result_ref` or `uri`",
                              fix='add input: {result_ref: "{{ <step>._ref }}"} or uri: "artifact://localfs/<path>"')
    return await asyncio.to_thread(_read_file, target)


async def _put(config: dict) -> dict[str, Any]:
    uri = _setting(config, "uri")
    if not isinstance(uri, str):
        raise ToolConfigError("artifact put has no `uri`", fix='add uri: "artifact://localfs/<path>"')
    data = _setting(config, "data")
    if data is None:
        raise ToolConfigError("artifact put has no `data`", fix='add data: "{{ <step> }}"')
    data = await large_results.resolve_refs(data)  # a stored result is written whole
    compress = config.get("compress", True)
    return await asyncio.to_thread(_write_file, uri, data, compress is not False)


class ArtifactTool:
    declaration = ARTIFACT  # its settings and traits: tool_kinds/artifact.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        action = str(config.get("action") or _setting(config, "action") or "get").lower()
        if action == "get":
            return await _get(config)
        if action == "put":
            return await _put(config)
        raise ToolConfigError(f"artifact action {action!r} is not one NoETL has", fix="use `action: get` or `put`")
