"""Sub-playbooks (``kind: playbook``): find the child definition, shape the child result.

Resolving reads files or the catalog, so it is an activity (``noetl.resolve_playbook``);
its answer, the normalized child playbook, is recorded in history, which pins the child to
the definition it started with. The child itself runs as a child workflow (see
``workflow.PlaybookWorkflow._run_child``).

Lookup order for ``path``: a file relative to the parent playbook's file (or absolute),
with or without a ``.yaml``/``.yml`` suffix; otherwise a catalog path (latest version, or
``version``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..dsl.models import playbook_definition
from ..errors import NoetlError, NotFound, PlaybookInvalid

__all__ = ["resolve_playbook", "RESOLVE_PLAYBOOK_ACTIVITY", "MAX_DEPTH", "child_result", "child_payload"]

RESOLVE_PLAYBOOK_ACTIVITY = "noetl.resolve_playbook"
MAX_DEPTH = 16   # sub-playbook nesting; deeper is almost surely unbounded recursion
PLAYBOOK_NOT_FOUND = "PlaybookNotFound"


def _candidate_files(path: str, parent_source: str | None) -> list[Path]:
    raw = Path(path).expanduser()
    bases = [raw] if raw.is_absolute() else []
    if not raw.is_absolute():
        if parent_source and not parent_source.startswith("<"):
            bases.append(Path(parent_source).resolve().parent / raw)
        bases.append(Path.cwd() / raw)
    out: list[Path] = []
    for base in bases:
        out += [base, base.with_name(base.name + ".yaml"), base.with_name(base.name + ".yml")]
    return out


def _resolve(path: str, version: int | None, parent_source: str | None) -> dict[str, Any]:
    from ..dsl import load_playbook, load_playbook_text

    if version is None:
        for candidate in _candidate_files(path, parent_source):
            if candidate.is_file():
                loaded = load_playbook(candidate)
                return {"playbook": playbook_definition(loaded.playbook),
                        "source": str(candidate), "version": None}
    from ..store.catalog import Catalog

    text, found_version = Catalog.from_config().get(path, version)
    loaded = load_playbook_text(text, source=f"catalog:{path}@{found_version}")
    return {"playbook": playbook_definition(loaded.playbook),
            "source": f"catalog:{path}@{found_version}", "version": found_version}


@activity.defn(name=RESOLVE_PLAYBOOK_ACTIVITY)
async def resolve_playbook(request: dict[str, Any]) -> dict[str, Any]:
    path = request.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ApplicationError("a `kind: playbook` task needs `path` (a file or a catalog path)",
                               type=PLAYBOOK_NOT_FOUND, non_retryable=True)
    try:
        return await asyncio.to_thread(_resolve, path.strip(), request.get("version"), request.get("parent_source"))
    except PlaybookInvalid as exc:
        details = "; ".join(str(d) for d in exc.diagnostics[:5])
        raise ApplicationError(f"sub-playbook {path!r} is invalid: {details}", type="PlaybookInvalid",
                               non_retryable=True) from None
    except NotFound as exc:
        raise ApplicationError(f"sub-playbook {path!r} not found as a file (next to the parent playbook) "
                               f"nor in the catalog: {exc.message}", type=PLAYBOOK_NOT_FOUND,
                               non_retryable=True) from None
    except NoetlError as exc:
        raise ApplicationError(f"sub-playbook {path!r}: {exc}", type=PLAYBOOK_NOT_FOUND,
                               non_retryable=True) from None


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
