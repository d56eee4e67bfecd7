"""Fuzz the loader and validator with mutated corpus playbooks (hypothesis).

Whatever a user feeds ``validate`` / ``load_playbook_text``, the answer is a list of
located diagnostics (file:line:col + code), never a traceback and never NTL999 (the
loader's "internal error" net, which would mean a pass crashed).
"""

from __future__ import annotations

import random

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.errors import PlaybookInvalid

from ..conftest import CORPUS

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SOURCES = {p.name: p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.yaml"))}

# Values a mutation may put anywhere in the document: scalars of every YAML type, broken
# templates, and small nested shapes.
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.text(max_size=20), st.sampled_from(["{{", "{{ x }", "{% for %}", "{{ a | nofilter }}", "step", "tool",
                                           "next", "kind", "python", "shell", "end", "- ", ": ", "*a", "&a",
                                           "!!python/object:os.system", "\t", "\x00", "\ufeff"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                       max_leaves=8)


def _nodes(data, path=()):
    """Every (path, value) in a parsed document."""
    yield path, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _nodes(value, (*path, index))


def _structural(text: str, rnd: random.Random, value) -> str:
    """Replace, delete or rename one node of the parsed document, then dump it again."""
    data = yaml.load(text, Loader=_LOADER)
    targets = [p for p, _ in _nodes(data) if p]
    if not targets:
        return yaml.dump(value, Dumper=_DUMPER)
    path = rnd.choice(targets)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = rnd.choice(["replace", "delete", "rename"])
    if action == "delete":
        del parent[last]
    elif action == "rename" and isinstance(parent, dict):
        parent[rnd.choice(["step", "tool", "next", "kind", "loop", "spec", "x", ""])] = parent.pop(last)
    else:
        parent[last] = value
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def _textual(text: str, rnd: random.Random, junk: str) -> str:
    """Cut, duplicate, re-indent or splice junk into the raw text."""
    lines = text.splitlines(keepends=True) or [""]
    i = rnd.randrange(len(lines))
    action = rnd.choice(["cut", "dup", "indent", "dedent", "splice", "truncate"])
    if action == "cut":
        del lines[i: i + rnd.randint(1, 4)]
    elif action == "dup":
        lines.insert(i, lines[i])
    elif action == "indent":
        lines[i] = "  " + lines[i]
    elif action == "dedent":
        lines[i] = lines[i].lstrip()
    elif action == "splice":
        at = rnd.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:at] + junk + lines[i][at:]
    else:
        return text[: rnd.randrange(len(text) + 1)]
    return "".join(lines)


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(SOURCES)))
    text = SOURCES[name]
    rnd = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            try:
                text = _structural(text, rnd, draw(_VALUES))
            except yaml.YAMLError:  # an earlier textual mutation broke the YAML: keep it broken
                pass
        else:
            text = _textual(text, rnd, draw(_SCALARS.map(str)))
    return name, text


def _check(diags, name: str) -> None:
    for diag in diags:
        assert diag.code != "NTL999", f"{name}: a validation pass crashed: {diag}"
        assert diag.code and diag.message, diag
        if diag.is_error:
            assert diag.file == f"mutated-{name}" and diag.line is not None and diag.col is not None, str(diag)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_corpus_playbooks_get_located_errors_never_a_traceback(case):
    name, text = case
    try:
        loaded = load_playbook_text(text, f"mutated-{name}")   # validate_text runs the same passes
    except PlaybookInvalid as exc:
        assert any(d.is_error for d in exc.diagnostics), "rejected without an error diagnostic"
        _check(exc.diagnostics, name)
    else:
        _check(loaded.warnings, name)
