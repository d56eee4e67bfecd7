"""A task's ``output:`` block (NoETL 5.x ``tool.output``), normalized onto this runtime's
reference-first results (``task.spec.result``, docs/tools.md "Large results") and
pipeline-local names.

What maps (docs/tools.md "A task's `output:`"):

* ``inline_max_bytes`` -> ``spec.result.inline_max_bytes``; without it, NoETL's own budget
  (:data:`NOETL_INLINE_MAX_BYTES`, 64 KiB), so a result NoETL stores is stored here too;
  ``preview_max_bytes`` -> ``spec.result.preview_max_bytes`` (the stored result's preview:
  its JSON cut to N bytes);
* ``store.kind``: ``auto`` (the worker's default store), ``disk`` and NoETL's removed
  ``object`` (``fs``: files), ``db`` (``postgres``: the ``noetl_result_store`` table), ``kv``
  (NoETL's NATS key-value store behind a ResultRef: here the worker's default store, which a
  playbook reads the same way, through the reference); ``gcs`` and ``s3`` need a cloud
  account (NTL343, NTL344); every other kind is NTL313;
* ``select: [{path, as}]``: each simple JSONPath (``$.a.b[0]``) becomes a
  ``spec.result.select`` entry (``extracted.<as>`` of a stored result) and the name ``as``,
  bound for the following tasks of the step (from the value inline, else from ``extracted``);
* ``output_select: [path, ...]`` (NoETL's name for the fields a stored result keeps for
  templates): each path goes to ``spec.result.keep``, kept with the stored result and read at
  its own place (``{{ step.count }}``). NoETL also copies a nested path's value up to the top
  level under its last key (``data.id`` -> ``{{ step.id }}``); that differs here, so only
  top-level keys are accepted (NTL313 says how to read a nested one);
* ``as``: the whole result bound under that name for the following tasks of the step;
* ``scope``: accepted; nothing deletes a stored result, so every scope is honoured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import paths
from .diagnostics import Reporter, kind_of

__all__ = ["normalize_output", "STORE_KINDS", "CLOUD_STORES", "NOETL_INLINE_MAX_BYTES"]

#: NoETL store kind -> this runtime's result store (None: the worker's default); NoETL reads its
#: removed ``object`` tier as ``disk`` (noetl/worker/result_handler.py), and so does this table
STORE_KINDS: Mapping[str, str | None] = {"auto": None, "disk": "fs", "db": "postgres", "kv": None, "object": "fs"}
#: NoETL's inline budget (``NOETL_INLINE_MAX_BYTES=65536`` in its docs): a result over it is stored,
#: where a playbook writes an ``output:`` block without ``inline_max_bytes``
NOETL_INLINE_MAX_BYTES = 64 * 1024
#: NoETL store kinds on a cloud service -> (code, the service): refused, naming it
CLOUD_STORES: Mapping[str, tuple[str, str]] = {
    "gcs": ("NTL343", "Google Cloud Storage (a GCS bucket and GCP credentials)"),
    "s3": ("NTL344", "Amazon S3 (an S3 bucket and AWS credentials)"),
}
#: NoETL store kinds this runtime has no store for, and why
_NO_STORE: Mapping[str, str] = {
    "memory": "results are never kept in a worker's memory between tasks (a task may run on any worker)",
    "duckdb": "results are not written to a DuckDB file by the runtime",
    "eventlog": "a result is never written into the event log (it would reach workflow history)",
}
_STORE_IGNORED = ("bucket", "compression", "credential", "driver", "prefix", "ttl")
_SCOPES = ("step", "execution", "workflow", "permanent")
_KEYS = ("select", "output_select", "as", "inline_max_bytes", "preview_max_bytes", "scope", "store")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JSONPATH_PART = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^'\]]+)'\]|\[\"([^\"\]]+)\"\]")


def _jsonpath(path: str) -> list[str | int] | None:
    """``$.a.b[0]`` -> ``['a', 'b', 0]``; None for what is not a plain path (``..``, ``*``, filters)."""
    text = path.strip()
    if not text.startswith("$"):
        text = "$." + text
    parts: list[str | int] = []
    pos = 1
    while pos < len(text):
        match = _JSONPATH_PART.match(text, pos)
        if match is None:
            return None
        name, index, quoted, dquoted = match.groups()
        parts.append(int(index) if index is not None else (name or quoted or dquoted))
        pos = match.end()
    return parts


def _binding(name: str, parts: list[str | int]) -> str:
    """The template that binds ``name``: the stored result's ``extracted`` value, else the path."""
    subscripts = "".join(f"[{p!r}]" for p in parts)
    return (f"{{{{ output.extracted[{name!r}] if (output is mapping and output.kind == 'result_ref') "
            f"else output{subscripts} }}}}")


class _Output:
    def __init__(self, reporter: Reporter, src: str) -> None:
        self.reporter, self.src = reporter, src
        self.result: dict[str, Any] = {}
        self.names: dict[str, Any] = {}

    def at(self, *keys: str | int) -> str:
        where = self.src
        for key in keys:
            where = paths.join(where, key) if isinstance(key, str) else f"{where}[{key}]"
        return where

    def error(self, message: str, *keys: str | int, fix: str, value: bool = False) -> None:
        self.reporter.add("NTL313", message, self.at(*keys), value=value, fix=fix)

    def size(self, block: Mapping[str, Any], key: str, target: str) -> None:
        value = block[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.error(f"`output.{key}` must be a whole number of bytes (0 or more), not {value!r}", key,
                       fix=f"write `{key}: 65536`", value=True)
        else:
            self.result[target] = value

    def store(self, store: Any) -> None:
        if not isinstance(store, Mapping):
            self.error(f"`output.store` must be a mapping (`store: {{kind: disk}}`), not {kind_of(store)}", "store",
                       fix="write `store: {kind: auto}`", value=True)
            return
        kind = store.get("kind", "auto")
        if kind in STORE_KINDS:
            if STORE_KINDS[kind] is not None:
                self.result["store"] = STORE_KINDS[kind]
        elif kind in CLOUD_STORES:
            code, service = CLOUD_STORES[kind]
            self.reporter.add(code, f"`output.store.kind: {kind}` needs {service}: results are stored here in "
                                    "files or PostgreSQL, never on a cloud service", self.at("store", "kind"),
                              value=True, fix=f"use `kind: auto`, `disk` or `db`; copy the result to {kind} "
                                              "from a later task if it must be there")
        elif kind in _NO_STORE:
            self.error(f"`output.store.kind: {kind}` is not available: {_NO_STORE[kind]}", "store", "kind",
                       fix="use `kind: auto` or `kv` (the worker's result store), `disk` (files under "
                           "the results/ directory of $NOETL_STORE) or `db` (PostgreSQL: $NOETL_STORE a postgresql:// URL)", value=True)
        else:
            self.error(f"unknown `output.store.kind: {kind}`", "store", "kind", value=True,
                       fix=f"use one of {', '.join(STORE_KINDS)}")
        for key in store:
            if key in _STORE_IGNORED:
                self.reporter.add("NTL312", f"`output.store.{key}` is ignored: the result stores here are files "
                                            "or a PostgreSQL table, configured by the worker", self.at("store", key))
            elif key != "kind":
                self.error(f"`output.store` has no setting `{key}`", "store", key,
                           fix=f"known: kind, {', '.join(_STORE_IGNORED)}")

    def select(self, items: Any) -> None:
        if not isinstance(items, list):
            self.error(f"`output.select` must be a list of `{{path, as}}`, not {kind_of(items)}", "select",
                       fix="write `select: [{path: \"$.data.next\", as: next_page}]`", value=True)
            return
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or set(item) != {"path", "as"}:
                self.error("each `output.select` entry has exactly `path` and `as`", "select", i,
                           fix="write `{path: \"$.data.next\", as: next_page}`")
                continue
            parts = _jsonpath(str(item["path"]))
            name = item["as"]
            if not parts:
                self.error(f"`path: {item['path']}` is not a plain JSONPath (`$.key`, `$.list[0]`, `$['a b']`): "
                           "wildcards, `..` and filters are not evaluated here", "select", i, "path", value=True,
                           fix="select one value by its keys and indexes, or compute it in a later task")
            elif not (isinstance(name, str) and _NAME.match(name)):
                self.error(f"`as: {name!r}` must be a name (letters, digits, `_`)", "select", i, "as", value=True,
                           fix="write `as: next_page`")
            else:
                self.result.setdefault("select", {})[name] = ".".join(str(p) for p in parts)
                self.names[name] = _binding(name, parts)


    def output_select(self, items: Any) -> None:
        if not isinstance(items, list):
            self.error(f"`output.output_select` must be a list of keys, not {kind_of(items)}", "output_select",
                       fix="write `output_select: [status, count]`", value=True)
            return
        for i, item in enumerate(items):
            parts = _jsonpath(item) if isinstance(item, str) else None
            if parts is None or len(parts) != 1 or not isinstance(parts[0], str) or "." in parts[0]:
                self.error(f"`output_select: {item!r}`: only a top-level key of the result is kept under "
                           "its own name here (NoETL would copy a nested value up to its last key)",
                           "output_select", i, value=True,
                           fix="list the top-level key (`count`), and read a nested value at its own path "
                               "(`{{ step.data.id }}`): a stored result keeps every path the templates read")
                continue
            keep = self.result.setdefault("keep", [])
            if parts[0] not in keep:
                keep.append(parts[0])


def normalize_output(block: Any, src: str, reporter: Reporter) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(spec.result keys, pipeline-local names)`` for a task's ``output:`` block."""
    out = _Output(reporter, src)
    if not isinstance(block, Mapping):
        out.error(f"`output` must be a mapping, not {kind_of(block)}", fix="write `output: {as: rows}`", value=True)
        return {}, {}
    for key, value in block.items():
        if key in ("inline_max_bytes", "preview_max_bytes"):
            out.size(block, key, key)
        elif key == "store":
            out.store(value)
        elif key == "select":
            out.select(value)
        elif key == "output_select":
            out.output_select(value)
        elif key == "as":
            if isinstance(value, str) and _NAME.match(value):
                out.names[value] = "{{ output }}"
            else:
                out.error(f"`output.as: {value!r}` must be a name (letters, digits, `_`)", "as", value=True,
                          fix="write `as: rows`")
        elif key == "scope":
            if value not in _SCOPES:
                out.error(f"`output.scope: {value}` is not one of {', '.join(_SCOPES)}", "scope", value=True,
                          fix="write `scope: execution`")
        elif key == "accumulate":
            out.error("`output.accumulate` is not available: a loop step's result already is the list of its "
                      "iterations' results, in item order", "accumulate",
                      fix="remove `accumulate:` and read the loop step's result (or collect with `set_ctx`)")
        else:
            out.error(f"`output` has no setting `{key}`", key, fix=f"known: {', '.join(_KEYS)}")
    if "inline_max_bytes" not in out.result and "inline_max_bytes" not in block:
        out.result["inline_max_bytes"] = NOETL_INLINE_MAX_BYTES
    return out.result, out.names
