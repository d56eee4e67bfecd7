"""Parse playbook YAML safely, remembering where every node came from.

Why not ``yaml.safe_load``: it forgets positions (diagnostics must say
``file:line:col``), silently keeps the last of two equal keys, turns ``2024-01-01``
into a ``date`` that JSON (and so Temporal) cannot carry, and expands aliases without
limit (the "billion laughs" document). This module composes the YAML node graph with
the safe loader, checks its expanded size first, then builds plain JSON-compatible
data and two position maps keyed by JSON path (see :mod:`.paths`):

* ``positions[path]``: (line, col) of a mapping key, or of a list item;
* ``value_positions[path]``: (line, col) where the value starts.

Lines and columns are 1-based. Nothing here raises for bad input: every problem is a
diagnostic in the given :class:`~.diagnostics.Reporter`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from . import paths
from .diagnostics import Reporter
from .gc_pause import gc_paused
from .sources import line_col

__all__ = ["MAX_DEPTH", "MAX_EXPANDED_NODES", "MAX_EXPANDED_CHARS", "Parsed", "parse_yaml"]

MAX_DEPTH = 200
# Only enforced when aliases make the document bigger than its text: a plain 5 MB
# file is bounded by its size, an aliased one is not.
MAX_EXPANDED_NODES = 200_000
# The same in characters of scalar text: few nodes can still hold a lot (one 1 MB string
# aliased a thousand times is 1,000 nodes and 1 GB once serialized). Aliases may grow a
# document to this size, or to the text's own length when that is larger.
MAX_EXPANDED_CHARS = 10_000_000

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Go-template quoting in a string (``{{`{{json .}}`}}``, docker's and kubectl's --format):
# not Jinja (a syntax error there), and NoETL 5.3.2 passes it through unchanged, so a shell
# command receives the text as written. Wrapped in ``{% raw %}`` here, as the file is read,
# every later pass (template checks, the workflow's render) sees a template that renders
# back to that same text (docs/migrating-from-noetl.md, "Templates").
_GO_TEMPLATE = re.compile(r"\{\{`.*?`\}\}", re.S)


def _go_literals(value: str) -> str:
    return _GO_TEMPLATE.sub(lambda m: "{% raw %}" + m.group(0) + "{% endraw %}", value)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MAP, _SEQ, _MERGE = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_STARTS = frozenset({yaml.MappingStartEvent, yaml.SequenceStartEvent})
_ENDS = frozenset({yaml.MappingEndEvent, yaml.SequenceEndEvent})


class _Loader(_BASE):  # type: ignore[misc, valid-type]
    """Safe loader that leaves dates as strings (JSON-compatible values only)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class Parsed:
    data: Any
    #: dicts, or (a plain document) mappings that parse the text again when first read
    positions: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    value_positions: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: (path, text) of every template string value, in document order, found while building
    #: so the template checks need not walk the document again; None when a `<<` merge
    #: made the built order differ from the document's (they walk it then)
    templates: list[tuple[str, str]] | None = field(default_factory=list)


def _pos(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Stop(Exception):
    """Abort building after a diagnostic was reported."""


def _expanded_size(root: Node, reporter: Reporter) -> tuple[int, int, int]:
    """(physical nodes, nodes after alias expansion, characters of scalar text after alias
    expansion); reports alias cycles and depth."""
    memo: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def size(node: Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            reporter.add("NTL006", "an alias refers to the anchor that contains it", line=_pos(node)[0],
                         col=_pos(node)[1])
            raise _Stop
        if depth > MAX_DEPTH:
            line, col = _pos(node)
            reporter.add("NTL013", f"nesting is deeper than {MAX_DEPTH} levels", line=line, col=col)
            raise _Stop
        active.add(key)
        nodes, chars = 1, len(node.value) if isinstance(node, ScalarNode) else 0
        children = node.value if isinstance(node, SequenceNode) else \
            [n for pair in node.value for n in pair] if isinstance(node, MappingNode) else []
        for child in children:
            child_nodes, child_chars = size(child, depth + 1)
            nodes, chars = nodes + child_nodes, chars + child_chars
        active.discard(key)
        memo[key] = nodes, chars
        return nodes, chars

    expanded, chars = size(root, 0)
    return len(memo), expanded, chars


class _Builder:
    def __init__(self, loader: Any, reporter: Reporter) -> None:
        self.loader = loader
        self.reporter = reporter
        self.positions: dict[str, tuple[int, int]] = {}
        self.value_positions: dict[str, tuple[int, int]] = {}
        self.parsed = Parsed(data=None, positions=self.positions, value_positions=self.value_positions)

    def fail(self, code: str, message: str, node: Node) -> None:
        line, col = _pos(node)
        self.reporter.add(code, message, line=line, col=col)
        raise _Stop

    def build(self, node: Node, path: str) -> Any:
        if isinstance(node, ScalarNode):
            value = self.scalar(node)
            if type(value) is str and ("{{" in value or "{%" in value) and self.parsed.templates is not None:
                self.parsed.templates.append((path, value))
            return value
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                self.fail("NTL011", f"unsupported YAML tag {node.tag}", node)
            out = []
            positions, value_positions = self.positions, self.value_positions
            for index, child in enumerate(node.value):
                child_path = f"{path}[{index}]"  # paths.join of an index, inlined: one per list item
                positions[child_path] = value_positions[child_path] = _pos(child)
                out.append(self.build(child, child_path))
            return out
        if isinstance(node, MappingNode):
            return self.mapping(node, path)
        self.fail("NTL011", "unsupported YAML node", node)  # pragma: no cover - no other node types

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag == _STR:  # most scalars: the text is the value (construct_object's bookkeeping cost 20%)
            return _go_literals(node.value) if "{{`" in node.value else node.value
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.fail("NTL011", _yaml_message(exc), node)
        if value is not None and not isinstance(value, str | int | float | bool):
            self.fail("NTL011", f"a YAML {type(value).__name__} value cannot be used in a playbook "
                                f"(tag {node.tag})", node)
        return value

    def key(self, node: Node) -> str:
        if not isinstance(node, ScalarNode):
            self.fail("NTL011", "a mapping key must be a plain scalar, not a list or mapping", node)
        value = self.scalar(node)
        if not isinstance(value, str):
            text = str(node.value)
            line, col = _pos(node)
            self.reporter.add("NTL012", f"key {text!r} is read by YAML as a {type(value).__name__}; "
                                        f"it is used as the string {text!r}", line=line, col=col)
            return text
        return value

    def mapping(self, node: MappingNode, path: str) -> dict[str, Any]:
        if node.tag != _MAP:
            self.fail("NTL011", f"unsupported YAML tag {node.tag}", node)
        pairs = node.value
        for key_node, _ in pairs:
            if key_node.tag != _STR or type(key_node) is not ScalarNode:
                return self.merged_mapping(node, path)
        return self.plain_mapping(pairs, path)

    def plain_mapping(self, pairs: list[tuple[ScalarNode, Node]], path: str) -> dict[str, Any]:
        """A mapping of string keys only (nearly all of them): the same result as
        ``merged_mapping`` with the per-key work inlined, since it runs for every key of
        a multi-MB file (a path join and two position tuples per key were a fifth of it)."""
        positions, value_positions = self.positions, self.value_positions
        templates = self.parsed.templates
        out: dict[str, Any] = {}
        for key_node, value_node in pairs:
            key = key_node.value
            if key in out:
                line, col = _pos(key_node)
                self.reporter.add("NTL010", f"duplicate key {key!r}", paths.join(path, key), line=line, col=col)
                raise _Stop
            child_path = path + _segment(key) if path else paths.join("", key)
            mark = key_node.start_mark
            positions[child_path] = mark.line + 1, mark.column + 1
            mark = value_node.start_mark
            value_positions[child_path] = mark.line + 1, mark.column + 1
            if type(value_node) is ScalarNode and value_node.tag == _STR:
                value = value_node.value
                if "{{`" in value:
                    value = _go_literals(value)
                if ("{{" in value or "{%" in value) and templates is not None:
                    templates.append((child_path, value))
                out[key] = value
            else:
                out[key] = self.build(value_node, child_path)
        return out

    def merged_mapping(self, node: MappingNode, path: str) -> dict[str, Any]:
        """A mapping with a ``<<`` merge or a key that is not a plain string."""
        explicit = [(k, v) for k, v in node.value if k.tag != _MERGE]
        # only `<<` merges and `=` value keys need PyYAML's flattening; string keys are the rule
        if any(k.tag != _STR for k, _ in node.value):
            self.parsed.templates = None
            try:
                self.loader.flatten_mapping(node)
            except yaml.YAMLError as exc:
                self.fail("NTL005", _yaml_message(exc), node)
        merged = node.value[: len(node.value) - len(explicit)]
        out: dict[str, Any] = {}
        seen: set[str] = set()
        for pairs, is_explicit in ((merged, False), (explicit, True)):
            for key_node, value_node in pairs:
                key = self.key(key_node)
                if is_explicit:
                    if key in seen:
                        line, col = _pos(key_node)
                        self.reporter.add("NTL010", f"duplicate key {key!r}", paths.join(path, key),
                                          line=line, col=col)
                        raise _Stop
                    seen.add(key)
                child_path = paths.join(path, key)
                self.positions[child_path] = _pos(key_node)
                self.value_positions[child_path] = _pos(value_node)
                out[key] = self.build(value_node, child_path)
        return out


#: the path segment of each mapping key seen (``.name`` or ``["a.b"]``); bounded so odd
#: keys cannot grow it, since a playbook repeats a few hundred keys
_SEGMENTS: dict[str, str] = {}


def _segment(key: str) -> str:
    segment = _SEGMENTS.get(key)
    if segment is None:
        segment = paths.join("_", key)[1:]
        if len(_SEGMENTS) < 4096:
            _SEGMENTS[key] = segment
    return segment


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.reader.ReaderError):  # str() would name "<unicode string>" and an offset
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        return f"character {char} is not allowed in YAML ({exc.reason})"
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        return " ".join(parts) or str(exc)
    return str(exc).strip() or type(exc).__name__


def _yaml_mark(exc: BaseException, text: str) -> tuple[int | None, int | None]:
    if isinstance(exc, yaml.reader.ReaderError):  # the reader knows only a character offset
        return line_col(text, exc.position)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return None, None
    return mark.line + 1, mark.column + 1


def _is_depth_error(exc: yaml.YAMLError) -> bool:
    """libyaml's own nesting limit ("exceeded maximum nesting depth")."""
    return isinstance(exc, yaml.MarkedYAMLError) and "nesting depth" in (exc.problem or "")


def _flow_limit_mark(text: str, start: int, depth: int) -> tuple[int, int] | None:
    """Where the flow brackets after ``start`` first pass ``MAX_DEPTH`` (quotes skipped).

    Used when libyaml stopped on its own limit before emitting those levels as events, so
    the error points at the same character whichever PyYAML release is installed.
    """
    quote = ""
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line_col(text, index)
        elif char in "]}":
            depth -= 1
    return None


def _nesting_ok(text: str, reporter: Reporter) -> bool | None:
    """Stream the parser's events once and refuse nesting deeper than ``MAX_DEPTH``: False
    after reporting it, else whether the document has an alias (None: it has none).

    The node composer recurses once per level (PyYAML's C composer crashes the process
    on a few hundred thousand nested ``[``), while the event parser keeps explicit
    stacks, so the depth is measured on events before anything is composed. The same
    pass sees the aliases: without any, the composed graph is a tree no larger than the
    text and the walk that measures alias expansion is skipped.
    """
    loader = _Loader(text)
    get_event = loader.get_event  # None after the stream's end
    depth = 0
    aliased: bool | None = None
    last = None
    try:
        # exact types, not isinstance: this loop runs once per event of a multi-MB file
        while (event := get_event()) is not None:
            kind = type(event)
            if kind in _STARTS:
                depth += 1
                if depth > MAX_DEPTH:
                    line, col = event.start_mark.line + 1, event.start_mark.column + 1
                    reporter.add("NTL013", f"nesting is deeper than {MAX_DEPTH} levels", line=line, col=col)
                    return False
            elif kind in _ENDS:
                depth -= 1
            elif kind is yaml.AliasEvent:
                aliased = True
            last = event
    except yaml.YAMLError as exc:
        if not _is_depth_error(exc):
            return True  # the composer reports the syntax error with its position (aliases or not)
        # libyaml (PyYAML 6.0.4 on) has a nesting limit of its own; its scanner looks ahead
        # in flow collections, so it can trip before our count reaches MAX_DEPTH. Either way
        # the document nests too deeply: one located error, whichever limit saw it first.
        seen_until = last.end_mark.index if last is not None else 0
        line, col = _flow_limit_mark(text, seen_until, depth) or _yaml_mark(exc, text)
        reporter.add("NTL013", f"nesting is deeper than {MAX_DEPTH} levels", line=line, col=col)
        return False
    finally:
        loader.dispose()
    return aliased


class _Unusual(Exception):
    """The document needs the composing path (an alias, a tag, a merge, a non-string key, an
    error...): :func:`_from_events` gives up and :func:`parse_yaml` starts over."""


#: the implicit resolvers (first character -> (tag, regexp)) of a plain scalar; a plain
#: scalar whose first character has none is a string, as nearly all of a playbook's are
_RESOLVERS: dict[str, list[tuple[str, Any]]] = {
    first: resolvers for first, resolvers in _Loader.yaml_implicit_resolvers.items() if first is not None}
#: plain keys known to be strings (a playbook repeats a few hundred; bounded like _SEGMENTS)
_PLAIN_KEYS: set[str] = set()
_UNUSUAL_TAGS = frozenset({_MERGE, "tag:yaml.org,2002:value", "tag:yaml.org,2002:yaml"})


# perf: PyYAML's composer and node graph on plain files (parse 1.44 -> 0.73 s at 5 MB) — benchmark: probes.validate_speed
def _from_events(text: str, *, located: bool = True) -> Parsed:
    """Build the data straight from the parser's events: one pass, no node graph (composing
    the nodes, then walking them, was most of the YAML time; docs/performance.md,
    "Validation speed"). ``located``: fill both position maps; without, they are left
    empty (:func:`parse_yaml` fills them by parsing again when first read).

    Only for the plain case: one document, no aliases, no explicit tags, string keys,
    no duplicate key, no `<<`, nesting within MAX_DEPTH, no syntax error. Anything else
    raises :class:`_Unusual` and the composing path, which locates every such problem,
    runs instead: what this returns for a plain document is equal to what it returns.
    """
    if _Loader.yaml_implicit_resolvers.get(None):  # pragma: no cover - SafeLoader has no wildcard
        raise _Unusual
    loader = _Loader(text)
    get_event = loader.get_event
    positions: dict[str, tuple[int, int]] = {}
    value_positions: dict[str, tuple[int, int]] = {}
    templates: list[tuple[str, str]] = []
    parsed = Parsed(data=None, positions=positions, value_positions=value_positions, templates=templates)
    resolvers, plain_keys, scalar_event = _RESOLVERS, _PLAIN_KEYS, yaml.ScalarEvent
    map_start, seq_start, map_end, seq_end = (yaml.MappingStartEvent, yaml.SequenceStartEvent,
                                              yaml.MappingEndEvent, yaml.SequenceEndEvent)
    # the open collections above the current one: (container, path, is_map, slot, key)
    stack: list[tuple[Any, str, bool, Any, str]] = []
    container: Any = None   # the current collection (None: the root is next)
    path = ""               # its path
    is_map = False
    slot: Any = None        # in a mapping: whether its key was read; in a list: the next index
    key = ""
    root: Any = _Unusual
    try:
        if type(get_event()) is not yaml.StreamStartEvent or type(get_event()) is not yaml.DocumentStartEvent:
            raise _Unusual
        while True:
            event = get_event()
            kind = type(event)
            if kind is map_end or kind is seq_end:
                value = container
                container, path, is_map, slot, key = stack.pop()
                if container is None:
                    root = value
                    break
                if is_map:
                    container[key] = value
                    slot = False
                else:
                    container.append(value)
                    slot += 1
                continue
            if kind is not scalar_event and kind is not map_start and kind is not seq_start:
                raise _Unusual   # an alias, or the document's end before a collection (a scalar root)
            if event.tag is not None:
                raise _Unusual
            if is_map and not slot:   # a mapping key: a plain string only
                if kind is not scalar_event:
                    raise _Unusual
                key = event.value
                if event.implicit[0] and key not in plain_keys:
                    if _implicit_tag(key) != _STR:
                        raise _Unusual   # not a string (`1:`, `<<:`, `null:`): the composer reports it
                    if len(plain_keys) < 4096:
                        plain_keys.add(key)
                if key in container:
                    raise _Unusual   # NTL010, reported with its position by the composing path
                slot = True
                if located:
                    mark = event.start_mark
                    positions[_key_path(path, key)] = mark.line + 1, mark.column + 1
                continue
            if kind is scalar_event:
                value = event.value
                if event.implicit[0] and (value[:1] in resolvers or not value):
                    value = _resolved(loader, event, value)
                templated = type(value) is str and ("{{" in value or "{%" in value)
                if templated and "{{`" in value:
                    raise _Unusual   # a Go template literal: the composing path wraps it (_go_literals)
                if located or templated:
                    child_path = _key_path(path, key) if is_map else f"{path}[{slot}]"
                    if templated:
                        templates.append((child_path, value))
                    if located:
                        _place(positions, value_positions, child_path, is_map, event.start_mark)
                if is_map:
                    container[key] = value
                    slot = False
                elif container is not None:
                    container.append(value)
                    slot += 1
                else:
                    raise _Unusual   # a scalar document: the composing path explains it
                continue
            if len(stack) >= MAX_DEPTH:
                raise _Unusual   # NTL013, located by the composing path
            child_path = "" if container is None else _key_path(path, key) if is_map else f"{path}[{slot}]"
            if located:
                _place(positions, value_positions, child_path, is_map and container is not None, event.start_mark)
            stack.append((container, path, is_map, slot, key))
            container, path = ({}, child_path) if kind is map_start else ([], child_path)
            is_map, slot = kind is map_start, (False if kind is map_start else 0)
        if type(get_event()) is not yaml.DocumentEndEvent or type(get_event()) is not yaml.StreamEndEvent:
            raise _Unusual   # a second document
    except yaml.YAMLError:
        raise _Unusual from None
    finally:
        loader.dispose()
    parsed.data = root
    return parsed


def _key_path(path: str, key: str) -> str:
    """``paths.join(path, key)``, with each key's segment remembered (:func:`_segment`)."""
    if not path:
        return paths.join("", key)
    segment = _SEGMENTS.get(key)
    return path + (segment if segment is not None else _segment(key))


def _place(positions: dict[str, tuple[int, int]], value_positions: dict[str, tuple[int, int]], path: str,
           keyed: bool, mark: Any) -> None:
    """Record where the value at ``path`` starts; a list item (or the root) is also located
    there, a mapping value's key was located when it was read."""
    where = mark.line + 1, mark.column + 1
    value_positions[path] = where
    if not keyed:
        positions[path] = where


# perf: two position entries per node of a valid playbook (0.73 -> 0.49 s, 555 -> 390 MB) — benchmark: probes.validate_speed
class _LazyPositions(Mapping[str, tuple[int, int]]):
    """One of the two position maps of a text parsed without them, filled by parsing it
    again on first read. A valid playbook's positions are read only when a diagnostic or a
    runtime error points into it: validating one no longer builds two entries per node
    (a quarter of the YAML pass at 5 MB)."""

    def __init__(self, located: _Relocate, value: bool) -> None:
        self._located, self._value = located, value

    def _map(self) -> Mapping[str, tuple[int, int]]:
        return self._located.maps()[self._value]

    def __getitem__(self, path: str) -> tuple[int, int]:
        return self._map()[path]

    def __contains__(self, path: object) -> bool:
        return path in self._map()

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


class _Relocate:
    """Both position maps of a text, computed once when first asked for."""

    def __init__(self, text: str) -> None:
        self._text: str | None = text
        self._maps: tuple[Mapping[str, tuple[int, int]], Mapping[str, tuple[int, int]]] | None = None
        self._lock = threading.Lock()

    def maps(self) -> tuple[Mapping[str, tuple[int, int]], Mapping[str, tuple[int, int]]]:
        if self._maps is None:
            with self._lock:   # an API server may read one playbook's positions on two threads
                if self._maps is None:
                    text = self._text
                    assert text is not None
                    with gc_paused(len(text)):
                        parsed = _from_events(text)   # the same text parsed before: plain again
                    self._maps, self._text = (parsed.positions, parsed.value_positions), None
        return self._maps


def _implicit_tag(value: str) -> str:
    """The tag YAML gives a plain scalar."""
    for tag, regexp in _RESOLVERS.get(value[:1], ()):
        if regexp.match(value):
            return tag
    return _STR


def _resolved(loader: Any, event: Any, value: str) -> Any:
    """A plain scalar that may not be a string (``3``, ``true``, ``null``, ``1.5``), as the
    composer then the builder would make it."""
    for tag, regexp in _RESOLVERS.get(value[:1], ()):
        if regexp.match(value):
            if tag in _UNUSUAL_TAGS:
                raise _Unusual
            node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
            value = loader.construct_object(node, deep=True)
            if value is not None and not isinstance(value, str | int | float | bool):
                raise _Unusual  # pragma: no cover - the safe implicit tags make only these
            return value
    return value


def parse_yaml(text: str, reporter: Reporter) -> Parsed | None:
    """Parse one YAML document into plain data plus positions; None after an error.

    A plain document is built from the parser's events and its positions are computed
    when first read (:class:`_LazyPositions`); any other goes through PyYAML's composer."""
    try:
        parsed = _from_events(text, located=False)
    except _Unusual:
        pass
    else:
        relocate = _Relocate(text)
        parsed.positions, parsed.value_positions = _LazyPositions(relocate, False), _LazyPositions(relocate, True)
        return parsed
    aliased = _nesting_ok(text, reporter)
    if aliased is False:
        return None
    loader = _Loader(text)
    try:
        try:
            root = loader.get_node() if loader.check_node() else None
            if root is not None and loader.check_node():
                extra = loader.get_node()
                line, col = (_pos(extra) if extra is not None else (None, None))
                reporter.add("NTL009", "the file holds more than one YAML document", line=line, col=col)
                return None
        except yaml.YAMLError as exc:
            line, col = _yaml_mark(exc, text)
            reporter.add("NTL005", f"YAML syntax error: {_yaml_message(exc)}", line=line, col=col)
            return None
        except RecursionError:
            reporter.add("NTL013", "the document nests too deeply to parse")
            return None
        except Exception as exc:  # the C composer fails this way on an alias inside its own anchor
            reporter.add("NTL006", f"the YAML aliases cannot be resolved ({type(exc).__name__})")
            return None
        if root is None or (isinstance(root, ScalarNode) and root.tag == "tag:yaml.org,2002:null"):
            reporter.add("NTL007", "the playbook is empty", line=1, col=1)
            return None
        if aliased and not _expansion_ok(root, text, reporter):
            return None
        builder = _Builder(loader, reporter)
        builder.positions[""] = builder.value_positions[""] = _pos(root)
        try:
            builder.parsed.data = builder.build(root, "")
        except _Stop:
            return None
        return builder.parsed
    finally:
        loader.dispose()


def _expansion_ok(root: Node, text: str, reporter: Reporter) -> bool:
    """Refuse aliases that expand the document past the limits (reported: False)."""
    try:
        physical, expanded, chars = _expanded_size(root, reporter)
    except _Stop:
        return False
    if expanded > physical and expanded > MAX_EXPANDED_NODES:
        line, col = _pos(root)
        reporter.add("NTL006", f"aliases expand the document to {expanded} nodes "
                               f"(limit {MAX_EXPANDED_NODES})", line=line, col=col)
        return False
    if chars > max(len(text), MAX_EXPANDED_CHARS):
        line, col = _pos(root)
        reporter.add("NTL006", f"aliases expand the document to {chars:,} characters of text "
                               f"(limit {MAX_EXPANDED_CHARS:,}, or the file's own length when larger)",
                     line=line, col=col)
        return False
    return True
