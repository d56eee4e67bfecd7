"""Reference-first results: large task results live in a result store, not in history.

A task result whose JSON is larger than ``inline_max_bytes`` (``task.spec.result``, else
``$NOETL_INLINE_MAX_BYTES``, else 256 KiB) is written to the result store (``fs`` or
``postgres``, where ``$NOETL_STORE`` says: ``blobs.py``) and the outcome carries a
**ResultRef** (``{"kind": "result_ref", "ref", "store", "meta", "extracted", ...}``, with
the fields templates read kept by ``kept_fields.py``, NoETL's ``_store`` and
``_size_bytes`` among them where templates read them). The activity resolves the
references in a task's rendered configuration back into their bodies before the tool runs
(:func:`resolve_refs`; one with a ``path`` stands for that part of the body).
See docs/tools.md#large-results-resultrefs (the ResultRef's shape, the stores' files and
tables) and docs/deployment.md (``NOETL_STORE``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ..errors import ToolConfigError, ToolError
from ..templates import is_template, render
from . import sealing
from .blobs import STORE_ENV, pg_connect, result_dsn, result_kind, result_root
from .kept_fields import kept_fields, part_of

__all__ = [
    "DEFAULT_INLINE_MAX_BYTES", "REF_KIND", "is_ref", "inline_max_bytes", "surely_inline", "externalize",
    "externalize_file", "needs_value", "DEFAULT_MAX_RESULT_BYTES", "max_result_bytes",
    "resolve_ref",
    "aresolve_ref", "resolve_refs", "select_values", "make_preview", "open_result_store",
    "check_result_spec", "ResultStore", "FsResultStore", "PostgresResultStore", "ResultRefError",
]

DEFAULT_INLINE_MAX_BYTES = 256 * 1024
#: the hard cap on one task result's JSON (``$NOETL_MAX_RESULT_BYTES``): past it the task fails
DEFAULT_MAX_RESULT_BYTES = 512 * 1024 * 1024
DEFAULT_PREVIEW = 1000  # characters (text) or 10 items (lists) when ``preview: true``
DEFAULT_PREVIEW_ITEMS = 10
REF_KIND = "result_ref"
CONTENT_TYPE = "application/json"
_SCHEME = "noetl://"
_SAFE = re.compile(r"[^A-Za-z0-9._:=@+-]")


class ResultRefError(ToolError):
    """A reference cannot be read (missing, corrupted, unknown store)."""

    def __init__(self, message: str, *, retryable: bool = False, fix: str | None = None) -> None:
        super().__init__(message, kind="result_ref", retryable=retryable, fix=fix)


def is_ref(value: Any) -> bool:
    return (isinstance(value, Mapping) and value.get("kind") == REF_KIND
            and isinstance(value.get("ref"), str) and value["ref"].startswith(_SCHEME))


def inline_max_bytes(spec: Mapping[str, Any] | None) -> int:
    value = (spec or {}).get("inline_max_bytes")
    if value is None:
        env = os.environ.get("NOETL_INLINE_MAX_BYTES")
        value = int(env) if env and env.strip().isdigit() else DEFAULT_INLINE_MAX_BYTES
    return int(value)


def max_result_bytes() -> int:
    """The hard cap on one task result's JSON: ``$NOETL_MAX_RESULT_BYTES``, else 512 MiB."""
    env = os.environ.get("NOETL_MAX_RESULT_BYTES", "").strip()
    return int(env) if env.isdigit() else DEFAULT_MAX_RESULT_BYTES


_WALK_LIMIT = 256  # values looked at before surely_inline gives up and lets externalize measure


def surely_inline(value: Any, spec: Mapping[str, Any] | None) -> bool:
    """True when ``value``'s JSON certainly fits ``inline_max_bytes``, found without encoding it.

    An upper bound from a walk over at most a few hundred values (a string counts six bytes
    a character, the most an escape takes). It lets the activity keep the usual small result
    on the event loop; anything else goes to :func:`externalize`, in a thread, which measures
    the encoded body exactly.
    """
    limit = inline_max_bytes(spec)
    budget, seen, stack = 0, 0, [value]
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _WALK_LIMIT:
            return False
        if item is None or isinstance(item, bool):
            budget += 5
        elif isinstance(item, int | float):
            if isinstance(item, int) and not -(10**18) < item < 10**18:
                return False
            budget += 24
        elif isinstance(item, str):
            budget += 6 * len(item) + 2
        elif isinstance(item, list):
            budget += 2 + len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            budget += 2 + 2 * len(item)
            for key, sub in item.items():
                if not isinstance(key, str):
                    return False
                budget += 6 * len(key) + 2
                stack.append(sub)
        else:
            return False
        if budget > limit:
            return False
    return True


# ---------------------------------------------------------------------------- stores


class ResultStore(Protocol):
    name: str

    def put(self, execution_id: str, key: str, body: bytes, meta: dict[str, Any]) -> str:
        """Store ``body``; return its ``noetl://`` reference."""
        ...

    def get(self, ref: str) -> bytes: ...


def _split(ref: str, store: str) -> tuple[str, str]:
    rest = ref[len(_SCHEME) + len(store) + 1:]
    execution_id, _, key = rest.partition("/")
    if not execution_id or not key or "/" in key or ".." in (execution_id, key) or _SAFE.search(execution_id + key):
        raise ResultRefError(f"malformed result reference {ref!r}")
    return execution_id, key


class FsResultStore:
    """One JSON file per stored result, under ``root/<execution_id>/``."""

    name = "fs"

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else result_root()

    def put(self, execution_id: str, key: str, body: bytes, meta: dict[str, Any]) -> str:
        folder = self.root / execution_id
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / key
        tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(body)
        os.replace(tmp, target)  # readers never see half a file
        return f"{_SCHEME}{self.name}/{execution_id}/{key}"

    def put_file(self, execution_id: str, key: str, source: str) -> str:
        """Move the file ``source`` in as the body (renamed when it is on the same file
        system, else copied in chunks): never held in memory."""
        folder = self.root / execution_id
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / key
        try:
            os.replace(source, target)
        except OSError:  # another file system: copy, then rename (readers never see half a file)
            tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        return f"{_SCHEME}{self.name}/{execution_id}/{key}"

    def get(self, ref: str) -> bytes:
        execution_id, key = _split(ref, self.name)
        path = self.root / execution_id / key
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ResultRefError(f"result {ref} not found under {self.root}",
                                 fix=f"every worker must see the same ${STORE_ENV} directory") from None


class PostgresResultStore:
    """Rows of ``noetl_result_store(ref, execution_id, body, bytes, sha256, content_type, created_at)``."""

    name = "postgres"
    TABLE = "noetl_result_store"

    def __init__(self, dsn: str | None = None) -> None:
        dsn = dsn or result_dsn()
        if not dsn:
            raise ToolConfigError("result store 'postgres' needs a database",
                                  fix=f"set ${STORE_ENV} to a postgresql:// URL on the workers")
        self.dsn = dsn

    def _connect(self):
        # A connection per call: results are rare (only those over the inline cap) and big.
        return pg_connect(self.dsn, "results", [
            f"""CREATE TABLE IF NOT EXISTS {self.TABLE} (
            ref text PRIMARY KEY, execution_id text NOT NULL, body bytea NOT NULL,
            bytes bigint NOT NULL, sha256 text NOT NULL, content_type text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now())""",
            f"CREATE INDEX IF NOT EXISTS {self.TABLE}_execution ON {self.TABLE} (execution_id)"])

    def put(self, execution_id: str, key: str, body: bytes, meta: dict[str, Any]) -> str:
        ref = f"{_SCHEME}{self.name}/{execution_id}/{key}"
        with self._connect() as conn:
            conn.execute(
                f"INSERT INTO {self.TABLE} (ref, execution_id, body, bytes, sha256, content_type) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (ref) DO UPDATE SET body = EXCLUDED.body, "
                "bytes = EXCLUDED.bytes, sha256 = EXCLUDED.sha256, content_type = EXCLUDED.content_type",
                (ref, execution_id, body, meta["bytes"], meta["sha256"], meta["content_type"]))
        return ref

    def get(self, ref: str) -> bytes:
        _split(ref, self.name)
        with self._connect() as conn:
            row = conn.execute(f"SELECT body FROM {self.TABLE} WHERE ref = %s", (ref,)).fetchone()
        if row is None:
            raise ResultRefError(f"result {ref} not found in {self.TABLE}")
        return bytes(row[0])


def open_result_store(name: str | None = None) -> ResultStore:
    """``fs`` or ``postgres``; default: the kind of ``$NOETL_STORE``."""
    name = (name or result_kind()).strip().lower()
    if name in ("fs", "file", "filesystem"):
        return FsResultStore()
    if name in ("postgres", "postgresql", "pg"):
        return PostgresResultStore()
    raise ToolConfigError(f"unknown result store {name!r}", fix="use 'fs' or 'postgres'")


def check_result_spec(spec: Mapping[str, Any] | None) -> None:
    """Fail before the tool runs if the result store cannot be used."""
    if spec and spec.get("store"):
        open_result_store(str(spec["store"]))
    select = (spec or {}).get("select") or {}
    if not isinstance(select, Mapping):
        raise ToolConfigError("task.spec.result.select must map names to expressions or dotted paths")


# ------------------------------------------------------------------ select / preview


def _path(value: Any, path: str) -> Any:
    for part in path.strip().split("."):
        if part == "":
            continue
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", part):
            i = int(part)
            value = value[i] if -len(value) <= i < len(value) else None
        else:
            return None
    return value


_DOTTED = re.compile(r"^\s*[\w\-]+(\.[\w\-]+)*\s*$")


def select_values(value: Any, select: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{name: expression | dotted path}`` evaluated against a result.

    A plain dotted path (``data.paging.total``, ``rows.0.id``) walks the value; anything
    else is a Jinja expression, with or without ``{{ }}`` (``data.items | length``), that
    sees ``result`` (the whole value) and, for a mapping result, its keys as names. A
    failing expression yields ``None``.
    """
    out: dict[str, Any] = {}
    for name, expr in (select or {}).items():
        if not isinstance(expr, str):
            out[str(name)] = expr
        elif _DOTTED.match(expr) and not is_template(expr):
            out[str(name)] = _path(value, expr)
        else:
            context = dict(value) if isinstance(value, Mapping) else {}
            context["result"] = value
            text = expr if is_template(expr) else "{{ " + expr + " }}"
            try:
                out[str(name)] = render(text, context, where=f"result.select.{name}")
            except Exception:  # noqa: BLE001 - a bad selector must not lose the result
                out[str(name)] = None
    return out


def make_preview(value: Any, preview: Any) -> Any:
    """First N characters (strings, or the JSON text of a mapping) or N items (lists)."""
    if preview is None or preview is False:
        return None
    n = int(preview) if not isinstance(preview, bool) else None
    if isinstance(value, list):
        return value[: n if n is not None else DEFAULT_PREVIEW_ITEMS]
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[: n if n is not None else DEFAULT_PREVIEW]


# ------------------------------------------------------------------ store / resolve


def _key(task_run_id: str, attempt: int) -> str:
    return _SAFE.sub("_", f"{task_run_id}-{attempt}.json")


def externalize(outcome: dict[str, Any], spec: Mapping[str, Any] | None, *, execution_id: str,
                task_run_id: str, attempt: int) -> dict[str, Any]:
    """Move a large ``outcome["result"]`` into the result store (in place; returns the outcome).

    Adds ``outcome["result_ref"]`` (the same ResultRef as the new ``result``) so the
    workflow can record ``result.stored``.
    """
    value = outcome.get("result")
    if value is None or is_ref(value):
        return outcome
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    if len(body) <= inline_max_bytes(spec):
        return outcome
    spec = spec or {}
    store = open_result_store(spec.get("store"))
    meta = {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest(), "content_type": CONTENT_TYPE}
    # Sealed under the deployment's codec when it has one (``sealing``); meta describes the clear body.
    ref = store.put(_SAFE.sub("_", execution_id), _key(task_run_id, attempt), sealing.seal(body), meta)
    result_ref: dict[str, Any] = {"kind": REF_KIND, "ref": ref, "store": store.name, "meta": meta,
                                  "extracted": select_values(value, spec.get("select"))}
    if spec.get("keep") is not None:  # the fields the playbook's templates read (kept_fields.py)
        result_ref.update(kept_fields(value, spec["keep"]))
        _noetl_markers(result_ref, store.name, len(body))
    preview = make_preview(value, spec.get("preview"))
    if spec.get("preview_max_bytes") is not None:  # NoETL 5.x ``output.preview_max_bytes``
        preview = body[: int(spec["preview_max_bytes"])].decode("utf-8", errors="ignore")
    if preview is not None:
        result_ref["preview"] = preview
    outcome["result"] = result_ref
    outcome["result_ref"] = result_ref
    return outcome


#: this runtime's result store -> NoETL's name of that tier (``output.store.kind``: dsl/task_output.py)
NOETL_TIERS: Mapping[str, str] = {"fs": "disk", "postgres": "db"}


def _noetl_markers(result_ref: dict[str, Any], store: str, size: int) -> None:
    """NoETL's keys of a stored result, where its templates read them and the result has no such
    key: ``_store`` (the tier: ``disk`` for files, ``db`` for PostgreSQL) and ``_size_bytes``."""
    for key, value in (("_store", NOETL_TIERS.get(store, store)), ("_size_bytes", size)):
        if key in result_ref["absent"]:
            result_ref["absent"].remove(key)
            result_ref["fields"][key] = value


_CHUNK = 1 << 20


def needs_value(spec: Mapping[str, Any] | None) -> bool:
    """Whether storing a result takes its value, not only its JSON: values selected into the
    reference (``select``), a ``preview``, fields kept for templates (``keep``)."""
    spec = spec or {}
    return bool(spec.get("select") or spec.get("keep")) or any(
        spec.get(key) is not None and spec.get(key) is not False for key in ("preview", "preview_max_bytes"))


def externalize_file(path: str, spec: Mapping[str, Any] | None, *, execution_id: str, task_run_id: str,
                     attempt: int) -> dict[str, Any]:
    """A result whose JSON a task's process wrote to the file ``path`` (over the inline cap),
    stored and referenced as :func:`externalize` would: the same ResultRef.

    The body is never held whole in the worker when nothing needs its value: its sha256
    is read in chunks and the file is moved into an ``fs`` store (a ``postgres`` store or
    a sealing codec takes the body as bytes: one copy). When the spec asks for values of
    the result (``select``, ``preview``, kept fields), it is parsed once, as before.
    """
    spec = spec or {}
    if needs_value(spec):
        with open(path, "rb") as fh:
            value = json.load(fh)
        stored = externalize({"result": value}, spec, execution_id=execution_id, task_run_id=task_run_id,
                             attempt=attempt)
        return stored["result"]
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    meta = {"bytes": size, "sha256": digest.hexdigest(), "content_type": CONTENT_TYPE}
    store = open_result_store(spec.get("store"))
    execution, key = _SAFE.sub("_", execution_id), _key(task_run_id, attempt)
    if isinstance(store, FsResultStore) and sealing.current() is None:
        ref = store.put_file(execution, key, path)
    else:
        with open(path, "rb") as fh:
            ref = store.put(execution, key, sealing.seal(fh.read()), meta)
    return {"kind": REF_KIND, "ref": ref, "store": store.name, "meta": meta, "extracted": {}}


def _store_of(ref: str) -> ResultStore:
    if not isinstance(ref, str) or not ref.startswith(_SCHEME):
        raise ResultRefError(f"not a result reference: {ref!r}")
    name = ref[len(_SCHEME):].split("/", 1)[0]
    if name not in ("fs", "postgres"):
        raise ResultRefError(f"result reference {ref!r} names an unknown store {name!r}")
    return open_result_store(name)


def resolve_ref(ref: Mapping[str, Any] | str) -> Any:
    """The body a ResultRef (or its ``noetl://`` string) points to, checked against its sha256."""
    uri = ref.get("ref") if isinstance(ref, Mapping) else ref
    try:
        body = sealing.unseal(_store_of(uri).get(uri))  # type: ignore[arg-type]
    except ValueError as exc:  # sealed, and this process has no codec to open it
        raise ResultRefError(f"cannot read result {uri}: {exc}") from None
    expected = (ref.get("meta") or {}).get("sha256") if isinstance(ref, Mapping) else None
    if expected and hashlib.sha256(body).hexdigest() != expected:
        raise ResultRefError(f"result {uri} does not match its sha256 (the stored file changed)")
    return json.loads(body)


async def aresolve_ref(ref: Mapping[str, Any] | str) -> Any:
    return await asyncio.to_thread(resolve_ref, ref)


def _collect(value: Any, found: dict[str, Mapping[str, Any]]) -> None:
    if is_ref(value):
        found.setdefault(value["ref"], value)
    elif isinstance(value, Mapping):
        for v in value.values():
            _collect(v, found)
    elif isinstance(value, list):
        for v in value:
            _collect(v, found)


def _replace(value: Any, bodies: dict[str, Any]) -> Any:
    if is_ref(value):
        body = bodies[value["ref"]]
        if isinstance(value.get("path"), list):  # a part of it (engine/stored_results.py)
            return part_of(body, [str(p) for p in value["path"]])
        return body
    if isinstance(value, Mapping):
        return {k: _replace(v, bodies) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, bodies) for v in value]
    return value


async def resolve_refs(value: Any) -> Any:
    """``value`` with every ResultRef inside replaced by its body (each read once)."""
    found: dict[str, Mapping[str, Any]] = {}
    _collect(value, found)
    if not found:
        return value
    bodies = {uri: await aresolve_ref(ref) for uri, ref in found.items()}
    return _replace(value, bodies)
