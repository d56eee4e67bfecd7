"""A step result stored by reference, as the workflow's templates see it.

A result larger than ``inline_max_bytes`` leaves its activity as a ResultRef
(``store/large_results.py``): the body stays in the result store, and the ref carries
``fields``, the values of the paths this playbook's templates read from it
(``dsl/result_paths.py``, sent to the activity as ``result_spec.keep``) plus small
top-level scalars, within a byte budget; ``omitted``, the named paths too large to keep,
with their size; ``absent``, the named paths the result does not have.

:class:`StoredResult` serves those to templates under the result's own paths, so
``{{ start.count > 100 }}`` reads the same whether ``start`` was 3 KB or 3 MB. What it does
not hold (a whole large list, a path no template names) is never read as undefined: it
raises ``ResultFieldUnavailable`` naming the path and the sizes, which fails the step that
reads it (a guard, a ``set:``) or the task whose argument it is. A task argument that is
exactly such a part (``data: "{{ start.rows }}"``) is handed to the activity as a reference
to that part instead, read back there from the store (:func:`lazy_parts`).

A loop step's result (engine/loops.py) holds its iterations' results, each maybe stored:
:class:`StoredLoopResult` and :class:`StoredIterations` wrap each one as it is read, so
``{{ each.results[0].count }}`` reads the same way (the loop's tasks keep the paths read below
``each.results.<n>.``: ``engine/graph.py``).

Only executions listing ``behaviours.STORED_RESULT_FIELDS`` see this view (the engine's
``template_context``); before it a stored result was its ref and its fields undefined.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..errors import ResultFieldUnavailable
from ..templates import HeldPart

__all__ = ["StoredResult", "StoredLayer", "StoredLoopResult", "StoredIterations", "holds_fields", "held_outcome", "lazy_parts", "REF_KIND", "REF_ONLY_KEYS", "REF_KEYS"]

REF_KIND = "result_ref"  # store/large_results.REF_KIND (the engine does not import the store)
#: what a reference to a part keeps of its whole's ref (the rest describes the whole)
REF_ONLY_KEYS = ("kind", "ref", "store", "meta")
#: the reference's own keys a template may read where the result has no such field
#: (``{{ step.kind == 'result_ref' }}``, ``step.extracted.x``, ``step.preview``: docs/tools.md)
REF_KEYS = frozenset({"kind", "ref", "store", "meta", "extracted", "preview"})

_LAZY: ContextVar[bool] = ContextVar("noetl_stored_lazy_parts", default=False)


@contextmanager
def lazy_parts() -> Iterator[None]:
    """Inside: a part the workflow does not hold renders as a reference to it (a task's
    configuration, which its activity resolves), not as an error."""
    token = _LAZY.set(True)
    try:
        yield
    finally:
        _LAZY.reset(token)


def holds_fields(value: Any) -> bool:
    """A ResultRef written with the fields its playbook reads (by this code's activities)."""
    return isinstance(value, dict) and value.get("kind") == REF_KIND and isinstance(value.get("fields"), dict)


def _human(n: Any) -> str:
    if not isinstance(n, int):
        return "an unknown size"
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


class StoredResult(HeldPart, Mapping[str, Any]):
    """The stored result ``name`` (or its part at ``prefix``), read through its kept fields."""

    __slots__ = ("_ref", "_name", "_prefix")

    def __init__(self, ref: dict[str, Any], name: str, prefix: tuple[str, ...] = ()) -> None:
        self._ref, self._name, self._prefix = ref, name, prefix

    def _path(self, key: Any) -> str:
        return ".".join((*self._prefix, str(key)))

    def _below(self, path: str) -> bool:
        start = path + "."
        return any(p.startswith(start) for key in ("fields", "omitted", "absent")
                   for p in (self._ref.get(key) or ()))

    def __getitem__(self, key: Any) -> Any:
        if not self._prefix and key in ("_ref", "_preview"):  # NoETL's names: the reference, its preview
            return self._ref if key == "_ref" else self._ref.get("preview")
        path = self._path(key)
        fields = self._ref["fields"]
        if path in fields:
            return fields[path]
        if path in (self._ref.get("omitted") or ()) or self._below(path):
            # held in part or not at all: what reads it decides (a task argument may take it whole)
            return StoredResult(self._ref, self._name, (*self._prefix, str(key)))
        if not self._prefix and key in REF_KEYS and key in self._ref:
            return self._ref[key]  # the reference's own keys, where the result has no such field
        if path in (self._ref.get("absent") or ()):
            raise KeyError(key)  # undefined, as the same read of an inline result
        raise self.unavailable(path)

    def __contains__(self, key: object) -> bool:
        if not self._prefix and key in ("_ref", "_preview"):
            return True
        path = self._path(key)
        if path in self._ref["fields"] or path in (self._ref.get("omitted") or ()) or self._below(path):
            return True
        if not self._prefix and key in REF_KEYS and key in self._ref:
            return True
        if path in (self._ref.get("absent") or ()):
            return False
        raise self.unavailable(path)

    def __iter__(self) -> Iterator[str]:
        raise self.unavailable(".".join(self._prefix) or None)

    def _length(self) -> int | None:
        """The length the activity recorded for an omitted part (``| length`` reads it)."""
        return (self._ref.get("lengths") or {}).get(".".join(self._prefix)) if self._prefix else None

    def __len__(self) -> int:
        length = self._length()
        if length is None:
            raise self.unavailable(".".join(self._prefix) or None)
        return length

    def __bool__(self) -> bool:
        if not self._prefix:
            return True  # a stored result is never empty: it was too large to stay inline
        length = self._length()
        if length is None:
            raise self.unavailable(".".join(self._prefix))
        return length > 0

    def __str__(self) -> str:
        if not self._prefix:
            return str(self._ref)  # as before: the whole result prints as its reference
        raise self.unavailable(".".join(self._prefix))

    __repr__ = __str__

    def as_value(self) -> Any:
        """The whole result: its ref (an activity reads it back). A part: a reference to
        it inside a task's configuration (:func:`lazy_parts`), else unavailable."""
        if not self._prefix:
            return self._ref
        if _LAZY.get():
            part = {k: self._ref[k] for k in REF_ONLY_KEYS if k in self._ref}
            part["path"] = list(self._prefix)
            return part
        raise self.unavailable(".".join(self._prefix))

    def in_text(self) -> Any:
        """Printed into text: the whole result as its reference; a part never (an activity
        cannot find a reference inside a string to read it back)."""
        if not self._prefix:
            return self._ref
        raise self.unavailable(".".join(self._prefix))

    def unavailable(self, path: str | None) -> ResultFieldUnavailable:
        name = f"{self._name}.{path}" if path else self._name
        whole = _human((self._ref.get("meta") or {}).get("bytes"))
        omitted = (self._ref.get("omitted") or {}).get(path) if path else None
        if omitted is not None:
            why = (f"`{name}` is {_human(omitted)}, over what the workflow keeps of a stored result "
                   f"({_human(self._ref.get('kept_max_bytes'))})")
        elif path:
            why = f"no template of the playbook names `{name}` as a fixed path, so it was not kept"
        else:
            why = "the whole result is not in the workflow, only the fields its templates name"
        step, _, iteration = self._name.partition(".")  # `each.results.0`: a loop's iteration
        what = f"iteration result `{self._name}` of loop step `{step}`" if iteration else f"step result `{step}`"
        return ResultFieldUnavailable(
            f"`{name}` cannot be read here: {what} ({whole}) is stored by reference "
            f"({self._ref.get('ref')}); {why}",
            fix=f"read it in a task (pass `{{{{ {name} }}}}` as a task argument: the activity reads the stored "
                f"result), or have the step `{step}` return the small value the guard needs next to "
                "the large one (a count, a flag) and read that")


def _held(item: Any, name: str) -> Any:
    return StoredResult(item, name) if holds_fields(item) else item


class StoredIterations(HeldPart, Sequence[Any]):
    """A loop step's ``results`` whose iteration results stored by reference read through
    their kept fields (``{{ each.results[0].count }}``). Each is wrapped when it is read, so
    a read costs the same for a loop of 2 items or 20,000; the list itself is never copied."""

    __slots__ = ("_items", "_name")

    def __init__(self, items: list[Any], name: str) -> None:
        self._items, self._name = items, name

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._items)))]
        item = self._items[index]
        if not holds_fields(item):
            return item
        return StoredResult(item, f"{self._name}.results.{index % len(self._items)}")

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        for i, item in enumerate(self._items):
            yield _held(item, f"{self._name}.results.{i}")

    def __eq__(self, other: object) -> bool:
        return self._items == (other._items if isinstance(other, StoredIterations) else other)

    __hash__ = None  # type: ignore[assignment]  # a list's view: unhashable as the list

    # `results + [x]` and `[x] + results` give a plain list, as the list itself did
    def __add__(self, other: Any) -> Any:
        return list(self) + other if isinstance(other, list | StoredIterations) else NotImplemented

    def __radd__(self, other: Any) -> Any:
        return other + list(self) if isinstance(other, list) else NotImplemented

    def as_value(self) -> Any:
        """The list as it is: an activity reads each reference in it back."""
        return self._items

    in_text = as_value


class StoredLoopResult(HeldPart, Mapping[str, Any]):
    """A loop step's result (``{results, count, ...}``: engine/loops.py) whose ``results``
    is seen as :class:`StoredIterations`."""

    __slots__ = ("_result", "_name")

    def __init__(self, result: dict[str, Any], name: str) -> None:
        self._result, self._name = result, name

    def __getitem__(self, key: str) -> Any:
        value = self._result[key]
        return StoredIterations(value, self._name) if key == "results" and isinstance(value, list) else value

    def __contains__(self, key: object) -> bool:
        return key in self._result

    def __iter__(self) -> Iterator[str]:
        return iter(self._result)

    def __len__(self) -> int:
        return len(self._result)

    def __eq__(self, other: object) -> bool:
        return self._result == (other._result if isinstance(other, StoredLoopResult) else other)

    __hash__ = None  # type: ignore[assignment]

    def as_value(self) -> Any:
        return self._result

    in_text = as_value


class StoredLayer(Mapping[str, Any]):
    """A template layer (step results, task results by label) whose stored results are
    seen as :class:`StoredResult`, and the results of its loop steps (``loops``) as
    :class:`StoredLoopResult`."""

    __slots__ = ("_inner", "_loops")

    def __init__(self, inner: Mapping[str, Any], loops: Container[str] = ()) -> None:
        self._inner, self._loops = inner, loops

    def __getitem__(self, key: str) -> Any:
        value = self._inner[key]
        if holds_fields(value):
            return StoredResult(value, key)
        if key in self._loops and isinstance(value, dict) and isinstance(value.get("results"), list):
            return StoredLoopResult(value, key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._inner

    def __iter__(self) -> Iterator[str]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)


def held_outcome(view: dict[str, Any] | None, name: str, loop: bool = False) -> dict[str, Any] | None:
    """An outcome's template view (``output``/``outcome`` of a routing guard) whose stored
    result reads through its kept fields (``result`` and its alias ``data``); a loop step's
    (``loop``) whose iterations' stored results do."""
    if view is None:
        return view
    result: Any = view.get("result")
    if holds_fields(result):
        held: Any = StoredResult(result, name)
    elif loop and isinstance(result, dict) and isinstance(result.get("results"), list):
        held = StoredLoopResult(result, name)
    else:
        return view
    return {**view, "result": held, "data": held}
