"""The front end's one pipeline: read → parse → normalize → model → semantics.

``validate_text`` runs every pass it can and returns all diagnostics (it never
raises: the CLI and editors call it on arbitrary input). ``load_playbook*`` run the
same pipeline and raise :class:`~noetl_temporal.errors.PlaybookInvalid` carrying every
diagnostic when there is any error; warnings travel with the loaded playbook.

Passes after normalization run only when the earlier ones found no error, so one
mistake is not reported three times in different words (a refused ``next: end`` is
not also a model type error and an unreachable step).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PlaybookInvalid
from .artifact_check import check_artifact_uris
from .code_check import check_python_code
from .diagnostics import Diagnostic, Reporter, kind_of
from .gc_pause import gc_paused
from .model_errors import validate_model
from .models import Playbook
from .noetl_implicit import give_implicit_context, number_sql_execution_id
from .normalize import normalize
from .origins import Origins
from .script_sources import check_script_sources
from .sources import check_text, decode, read_source
from .template_check import check_templates
from .template_names import check_template_names
from .transfer_check import check_transfer_endpoints
from .validate import check_semantics
from .yaml_loader import parse_yaml

__all__ = ["LoadedPlaybook", "load_playbook", "load_playbook_text", "validate_text", "validate_file"]


@dataclass
class LoadedPlaybook:
    """A valid playbook with what a caller needs to explain it later.

    ``positions`` maps *source* paths (as the user wrote the YAML) to (line, col);
    :meth:`locate` maps a path of the normalized ``playbook`` (for example
    ``workflow[1].tool[0].config.url`` in a runtime error) back to the source.
    """

    playbook: Playbook
    source: str
    raw: dict[str, Any]
    #: read-only; a large one is computed when first read (yaml_loader._LazyPositions)
    positions: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)
    canonical: dict[str, Any] = field(default_factory=dict)
    origins: Origins = field(default_factory=Origins, repr=False)

    def locate(self, normalized_path: str) -> tuple[str, tuple[int, int] | None]:
        """``(source path, (line, col))`` of the nearest source node of a normalized path."""
        return Reporter(positions=self.positions).locate(self.origins.resolve(normalized_path))


def _sorted(items: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(items, key=lambda d: (d.line or 0, d.col or 0))


#: tool-setting errors (unknown key, wrong type) that do not stop the later checks
_SETTING_CODES = frozenset({"NTL310", "NTL311"})


def _run(text: str | bytes | None, reporter: Reporter) -> LoadedPlaybook | None:
    if isinstance(text, bytes | bytearray):
        text = decode(bytes(text), reporter)
    if text is None or not check_text(text, reporter):
        return None
    parsed = parse_yaml(text, reporter)
    if parsed is None:
        return None
    reporter.positions, reporter.value_positions = parsed.positions, parsed.value_positions
    reporter.templates = parsed.templates
    raw = parsed.data
    if not isinstance(raw, dict):
        reporter.add("NTL008", f"the top level is {kind_of(raw)}, not a mapping", "")
        return None
    canonical, origins = normalize(raw, reporter)
    reporter.resolve = origins.resolve
    check_templates(raw, reporter, templates=parsed.templates)
    if reporter.has_errors(besides=_SETTING_CODES):
        return None
    # A misspelt or mistyped tool setting leaves the playbook's shape intact: go on to the
    # model and semantic checks, so one run of `validate` reports every mistake it can know
    # (a missing `code:` in another step too), then refuse the playbook below.
    model = validate_model(canonical, reporter)
    if model is None:
        return None
    check_semantics(model, reporter)
    check_python_code(model, text, reporter)
    give_implicit_context(model, reporter)
    number_sql_execution_id(model, reporter)
    check_script_sources(model, reporter)
    check_transfer_endpoints(model, reporter)
    check_artifact_uris(model, reporter)
    check_template_names(raw, model, reporter, templates=parsed.templates)
    if reporter.has_errors():
        return None
    return LoadedPlaybook(playbook=model, source=reporter.source or "<string>", raw=raw,
                          positions=parsed.positions, warnings=_sorted(reporter.warnings),
                          canonical=canonical, origins=origins)


def _guarded(text: str | bytes | None, reporter: Reporter) -> LoadedPlaybook | None:
    """Run the pipeline; an exception inside a pass becomes a diagnostic, not a traceback."""
    try:
        with gc_paused(len(text) if text is not None else 0):
            return _run(text, reporter)
    except RecursionError:
        reporter.add("NTL013", "the document nests too deeply to check")
    except Exception as exc:  # a bug in a pass must not crash an editor or the CLI
        reporter.add("NTL999", f"internal error while checking: {type(exc).__name__}: {exc}")
    return None


#: what :func:`keep_until_exit` keeps: (kept results, their characters of source)
_kept: list[LoadedPlaybook] | None = None
_kept_chars = 0
#: at most this much source is kept (a result holds about a hundred times its text in memory)
KEEP_UP_TO_CHARS = 16_000_000


# perf: freeing a million objects before os._exit (0.2 s at 5 MB) — benchmark: probes.validate_speed
def keep_until_exit() -> None:
    """For a process that ends with ``os._exit`` (the CLI): keep what validation loaded
    instead of freeing it, since exiting frees it at no cost. Freeing a 5 MB playbook's
    million objects one by one was 0.2 CPU seconds of `validate` (docs/performance.md)."""
    global _kept
    if _kept is None:
        _kept = []


def _checked(text: str | bytes | None, reporter: Reporter) -> None:
    """Validate only: the loaded playbook is dropped while the collector is still paused, so
    re-enabling it does not scan a million objects about to be freed (a second, at 5 MB);
    or kept (:func:`keep_until_exit`)."""
    global _kept_chars
    size = len(text) if text is not None else 0
    with gc_paused(size):
        loaded = _guarded(text, reporter)
        if loaded is not None and _kept is not None and _kept_chars + size <= KEEP_UP_TO_CHARS:
            _kept.append(loaded)
            _kept_chars += size
            # out of the collector's sight: its next pass would otherwise scan all of them
            gc.freeze()
        del loaded


def validate_text(text: str | bytes, source: str = "<string>") -> list[Diagnostic]:
    """Every diagnostic (errors and warnings, in source order) for a playbook text; never raises."""
    reporter = Reporter(source=source)
    _checked(text, reporter)
    return _sorted(reporter.items)


def validate_file(path: str | Path) -> list[Diagnostic]:
    """Like :func:`validate_text` for a file, including file-level problems; never raises."""
    reporter = Reporter(source=str(path))
    _checked(read_source(path, reporter), reporter)
    return _sorted(reporter.items)


def _load(text: str | bytes | None, reporter: Reporter) -> LoadedPlaybook:
    loaded = _guarded(text, reporter)
    if loaded is None:
        raise PlaybookInvalid(_sorted(reporter.items), reporter.source)
    return loaded


def load_playbook_text(text: str | bytes, source: str = "<string>") -> LoadedPlaybook:
    """Load a playbook from text; raises ``PlaybookInvalid`` (with all diagnostics) on any error."""
    return _load(text, Reporter(source=source))


def load_playbook(path: str | Path) -> LoadedPlaybook:
    """Load a playbook file; raises ``PlaybookInvalid`` (with all diagnostics) on any error."""
    reporter = Reporter(source=str(path))
    return _load(read_source(path, reporter), reporter)
