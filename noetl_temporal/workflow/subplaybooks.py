"""Sub-playbooks (``kind: playbook``): find the child definition, shape the child result.

Resolving reads files or the catalog, so it is an activity (``noetl.resolve_playbook``);
its answer, the normalized child playbook, is recorded in history, which pins the child to
the definition it started with. The child itself runs as a child workflow (see
``workflow.PlaybookWorkflow._run_child``).

Lookup order for ``path`` (docs/tools.md, "playbook"): an absolute file, or a relative one
next to the parent playbook's file (never the worker's working directory), with or without
a ``.yaml``/``.yml`` suffix; otherwise the catalog (latest version, or ``version``): next to
a parent started from the catalog, then the path as written. ``located_source`` makes the
parent's file absolute when the execution starts, so every worker finds the same child.
"""

from __future__ import annotations

import asyncio
import posixpath
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from ..dsl.models import playbook_definition
from ..errors import NoetlError, NotFound, PlaybookInvalid

__all__ = ["located_source", "resolve_playbook", "RESOLVE_PLAYBOOK_ACTIVITY", "RESOLVE_TIMEOUT", "RESOLVE_RETRIES",
           "MAX_DEPTH", "child_result", "child_payload"]

RESOLVE_PLAYBOOK_ACTIVITY = "noetl.resolve_playbook"
MAX_DEPTH = 16   # sub-playbook nesting; deeper is almost surely unbounded recursion
PLAYBOOK_NOT_FOUND = "PlaybookNotFound"
# How a workflow calls RESOLVE_PLAYBOOK_ACTIVITY (a sub-playbook step, noetl_temporal.workflow):
# loading is quick; a worker that lost the activity is retried, a user's mistake is not.
RESOLVE_TIMEOUT = timedelta(seconds=60)
RESOLVE_RETRIES = RetryPolicy(maximum_attempts=3, non_retryable_error_types=[PLAYBOOK_NOT_FOUND, "PlaybookInvalid"])
# A child that is missing or invalid is the user's to fix, and the task's error says so: benign
# keeps the SDK from logging it again as a traceback on the worker (and from counting it).
_USER_ERROR = ApplicationErrorCategory.BENIGN


def located_source(source: str | None) -> str | None:
    """``source`` as the start request records it: a file the caller names by a relative
    path becomes absolute, resolved against the caller's working directory.

    Why here, at the start: the worker that resolves a sub-playbook may run in another
    process with another working directory (``run --address``, a deployed worker), and a
    relative child path is found next to the parent file, wherever that worker runs.
    ``inline``, ``catalog:...`` and ``<...>`` sources are not files and pass unchanged."""
    if not source or source.startswith(("<", "catalog:")) or source == "inline":
        return source
    path = Path(source).expanduser()
    if path.is_absolute() or not path.is_file():
        return source
    return str(path.resolve())


def _with_suffixes(base: Path) -> list[Path]:
    return [base, base.with_name(base.name + ".yaml"), base.with_name(base.name + ".yml")]


def _catalog_parent(parent_source: str | None) -> str | None:
    """The catalog path of a parent started from the catalog (``catalog:<path>@<version>``)."""
    if not parent_source or not parent_source.startswith("catalog:"):
        return None
    return parent_source[len("catalog:"):].rsplit("@", 1)[0]


def _file_parent(parent_source: str | None) -> Path | None:
    """The parent's file, when it was started from one (absolute since ``located_source``;
    an older start's relative source still resolves against this process's directory)."""
    if not parent_source or parent_source.startswith(("<", "catalog:")) or parent_source == "inline":
        return None
    return Path(parent_source).expanduser().resolve()


def _catalog_candidates(path: str, parent_source: str | None) -> list[str]:
    """Catalog paths to try: next to a catalog parent first (``dir/child`` for ``child``
    from ``dir/parent``), then the path as written (NoETL's catalog paths are absolute)."""
    out: list[str] = []
    parent = _catalog_parent(parent_source)
    if parent is not None and not path.startswith("/"):
        sibling = posixpath.normpath(posixpath.join(posixpath.dirname(parent), path))
        for suffix in (".yaml", ".yml"):
            sibling = sibling[: -len(suffix)] if sibling.endswith(suffix) else sibling
        if not sibling.startswith(".."):
            out.append(sibling)
    if path not in out:
        out.append(path)
    return out


def _file_candidates(path: str, parent_source: str | None) -> list[Path]:
    """Files to try: an absolute path as is; a relative one next to the parent's file only
    (never this worker's working directory, which differs from one worker to the next)."""
    raw = Path(path).expanduser()
    if raw.is_absolute():
        return _with_suffixes(raw)
    parent = _file_parent(parent_source)
    return _with_suffixes(parent.parent / raw) if parent is not None else []


def _not_found(path: str, parent_source: str | None, files: list[Path], entries: list[str]) -> NotFound:
    """What was looked for and where, so the user sees the resolved path, not just the one written."""
    tried = []
    if files:
        where = f" next to the parent playbook {parent_source}" if not Path(path).is_absolute() else ""
        tried.append(f"no file {files[0]} (nor with .yaml/.yml){where}")
    elif _file_parent(parent_source) is None and _catalog_parent(parent_source) is None:
        tried.append(f"no file looked up: the parent playbook ({parent_source or 'inline'}) has no file "
                     "location to resolve a relative path against")
    tried.append("no catalog entry " + " nor ".join(repr(e) for e in entries)
                 + (f" (the parent is {parent_source})" if _catalog_parent(parent_source) else ""))
    return NotFound(f"sub-playbook {path!r} not found: " + "; ".join(tried),
                    fix="put the child playbook at that file, give an absolute path, or register it "
                        "in the catalog the worker reads (NOETL_CATALOG_PATH / NOETL_CATALOG_DSN)")


def _resolve(path: str, version: int | None, parent_source: str | None) -> dict[str, Any]:
    from ..dsl import load_playbook, load_playbook_text

    files = _file_candidates(path, parent_source) if version is None else []
    for candidate in files:
        if candidate.is_file():
            loaded = load_playbook(candidate)
            return {"playbook": playbook_definition(loaded.playbook),
                    "source": str(candidate), "version": None}
    from ..store.catalog import Catalog

    catalog = Catalog.from_config()
    entries = _catalog_candidates(path, parent_source)
    for entry in entries:
        try:
            text, found_version = catalog.get(entry, version)
        except NotFound:
            continue
        loaded = load_playbook_text(text, source=f"catalog:{entry}@{found_version}")
        return {"playbook": playbook_definition(loaded.playbook),
                "source": f"catalog:{entry}@{found_version}", "version": found_version}
    raise _not_found(path, parent_source, files, entries)


def _given(request: dict[str, Any]) -> dict[str, Any]:
    """A playbook a workflow gives as YAML ``text`` or as a ``definition`` mapping
    (``noetl_temporal.workflow.execute_playbook``): loaded and validated like a file."""
    from ..dsl import load_playbook_text
    from ..dsl.models import playbook_from_definition

    source = request.get("source") or "inline"
    text = request.get("text")
    if request.get("normalized"):   # a loaded Playbook's definition: validated as it is
        try:
            return _answer(playbook_definition(playbook_from_definition(request["definition"])), source)
        except Exception as exc:
            raise PlaybookInvalid([f"not a valid playbook definition: {exc}"], source) from None
    if text is None:
        definition = request.get("definition")
        if not isinstance(definition, dict):
            raise PlaybookInvalid([f"a playbook must be a mapping, a YAML text or a catalog path, "
                                   f"not {type(definition).__name__}"], source)
        try:   # (its lines are those of the mapping dumped as YAML, keys in their order)
            return _answer(definition_of(load_playbook_text(_as_yaml(definition), source=request.get("source")
                                                            or "<mapping>")), source)
        except PlaybookInvalid:
            try:   # the normalized form (`playbook_definition`) is accepted as it is
                return _answer(playbook_definition(playbook_from_definition(definition)), source)
            except Exception:
                pass
            raise   # the source form's located diagnostics say what is wrong
    return _answer(definition_of(load_playbook_text(text, source=source)), source)


def definition_of(loaded: Any) -> dict[str, Any]:
    return playbook_definition(loaded.playbook)


def _as_yaml(definition: dict[str, Any]) -> str:
    """The mapping as YAML text, so its diagnostics carry line:col of this text."""
    import yaml

    return str(yaml.safe_dump(definition, sort_keys=False, allow_unicode=True))


def _answer(definition: dict[str, Any], source: str) -> dict[str, Any]:
    return {"playbook": definition, "source": source, "version": None}


async def _with_search_attributes(answer: dict[str, Any]) -> dict[str, Any]:
    """Whether the namespace has our search attributes (a child started with them where they
    are not registered would fail its parent's workflow task)."""
    from .search_attributes import search_attributes_available

    answer["search_attributes"] = await search_attributes_available(activity.client())
    return answer


@activity.defn(name=RESOLVE_PLAYBOOK_ACTIVITY)
async def resolve_playbook(request: dict[str, Any]) -> dict[str, Any]:
    """A sub-playbook's definition by ``path`` (a file or the catalog), or a playbook given as
    ``text``/``definition``; ``search_attributes: true`` also asks whether the namespace has ours."""
    if "text" in request or "definition" in request:
        try:
            answer = await asyncio.to_thread(_given, request)
        except PlaybookInvalid as exc:
            raise ApplicationError(_invalid_message(exc), type="PlaybookInvalid",
                                   non_retryable=True, category=_USER_ERROR) from None
        return await _with_search_attributes(answer) if request.get("search_attributes") else answer
    answer = await _resolve_path(request)
    return await _with_search_attributes(answer) if request.get("search_attributes") else answer


def _invalid_message(exc: PlaybookInvalid) -> str:
    shown = "; ".join(str(d) for d in exc.diagnostics[:5])
    more = len(exc.diagnostics) - 5
    return f"the playbook is invalid: {shown}" + (f" (and {more} more)" if more > 0 else "")


async def _resolve_path(request: dict[str, Any]) -> dict[str, Any]:
    path = request.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ApplicationError("a `kind: playbook` task needs `path` (a file or a catalog path)",
                               type=PLAYBOOK_NOT_FOUND, non_retryable=True, category=_USER_ERROR)
    try:
        return await asyncio.to_thread(_resolve, path.strip(), request.get("version"), request.get("parent_source"))
    except PlaybookInvalid as exc:
        details = "; ".join(str(d) for d in exc.diagnostics[:5])
        raise ApplicationError(f"sub-playbook {path!r} is invalid: {details}", type="PlaybookInvalid",
                               non_retryable=True, category=_USER_ERROR) from None
    except NotFound as exc:
        raise ApplicationError(str(exc), type=PLAYBOOK_NOT_FOUND, non_retryable=True, category=_USER_ERROR) from None
    except NoetlError as exc:
        raise ApplicationError(f"sub-playbook {path!r}: {exc}", type=PLAYBOOK_NOT_FOUND,
                               non_retryable=True, category=_USER_ERROR) from None


def child_payload(config: dict[str, Any]) -> dict[str, Any]:
    """The child's request payload: the task's ``input``/``payload``/``args`` merged (args win)."""
    payload: dict[str, Any] = {}
    for key in ("input", "payload", "args"):
        value = config.get(key)
        if isinstance(value, dict):
            payload.update(value)
    return payload


def child_result(output: dict[str, Any], return_step: str | None) -> Any:
    """What the parent task sees as the child's result.

    ``return_step`` names the child step whose result to return; otherwise the child's
    ``final_step`` result when it has one, else a map of every child step's last result.
    """
    steps = output.get("steps") or {}
    results = {name: info.get("result") for name, info in steps.items()}
    if return_step:
        return results.get(return_step)
    final = (output.get("result") or {}).get("final_step")
    if final and final in results:
        return results[final]
    return results
