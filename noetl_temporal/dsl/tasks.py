"""``step.tool`` in any accepted shape → a list of labeled canonical tasks.

Shapes (docs/semantics.md "Steps, pipelines and task policies", docs/dialect-aliases.md):

* one mapping ``tool: {kind: python, ...}`` → one task labeled ``name`` if given,
  else ``<step>_task``;
* a list of ``{name, kind, ...}``; items without ``name`` get ``task_<position>``;
* list items ``- label: {kind: ...}`` (one key whose value is the task).

Each task becomes ``{name, kind, spec, set_ctx, set_iter, set_vars, config}``:
``config`` holds every other key (code, url, cmd, input, args, ...) untouched, so a
tool reads its own settings without the loader knowing them. ``kind: workbook`` is
replaced here by the root ``workbook`` entry it names (the task's ``input`` wins over
the entry's, key by key), so the runtime never sees ``workbook``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..tool_kinds import LOAD_TIME_KINDS, NAMED_KINDS
from . import paths
from .diagnostics import Reporter, did_you_mean, kind_of
from .models import KNOWN_TOOL_KINDS
from .noetl_only import NOETL_TOOL_KINDS, tool_kind_message
from .origins import Origins
from .patches import PATCH_KEYS, collect_patches
from .policy_rules import normalize_task_policy
from .rejections import reject_task_keys
from .task_output import normalize_output
from .tool_check import check_keys

__all__ = ["TaskNormalizer", "ALL_KINDS"]

ALL_KINDS = (*KNOWN_TOOL_KINDS, *LOAD_TIME_KINDS)
_TASK_FIELDS = frozenset({"name", "kind", "spec", "output"}) | PATCH_KEYS


def _labelled(item: Mapping[str, Any]) -> bool:
    """``{label: {kind: ...}}``: one key, a mapping value, and the key is no task field."""
    if len(item) != 1:
        return False
    key, value = next(iter(item.items()))
    return isinstance(value, Mapping) and key not in _TASK_FIELDS and "kind" in value


class TaskNormalizer:
    def __init__(self, workbook: Any, reporter: Reporter, origins: Origins) -> None:
        self.reporter = reporter
        self.origins = origins
        self.workbook: dict[str, tuple[int, Mapping[str, Any]]] = {}
        if isinstance(workbook, list):
            for index, entry in enumerate(workbook):
                if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                    if entry["name"] in self.workbook:
                        self.reporter.add("NTL307", f"workbook entry {entry['name']!r} is defined twice",
                                          paths.join(paths.join("workbook", index), "name"))
                    self.workbook.setdefault(entry["name"], (index, entry))

    # ------------------------------------------------------------------ shapes

    def tool(self, value: Any, step_name: str, src: str, norm: str) -> list[dict[str, Any]]:
        """All tasks of ``step.tool`` (``src``/``norm`` are the paths of ``tool``)."""
        self.origins.add(norm, src)
        if isinstance(value, Mapping):
            label = value.get("name", f"{step_name}_task")
            task = self.task(value, label, src, paths.join(norm, 0), label_src=paths.join(src, "name"))
            return [task] if task is not None else []
        if not isinstance(value, list):
            self.reporter.add("NTL303", f"`tool` must be a task mapping or a list of tasks, not "
                                        f"{kind_of(value)}", src, value=True)
            return []
        if not value:
            self.reporter.add("NTL303", "`tool` is an empty list", src, value=True,
                              fix="add a task, e.g. `tool: {kind: noop}`")
            return []
        tasks: list[dict[str, Any]] = []
        for index, item in enumerate(value):
            item_src = paths.join(src, index)
            if not isinstance(item, Mapping):
                self.reporter.add("NTL303", f"a task must be a mapping, not {kind_of(item)}", item_src)
                continue
            if _labelled(item):
                label, body = next(iter(item.items()))
                body_src = paths.join(item_src, label)
                if "name" in body and body.get("kind") not in ("workbook", *NAMED_KINDS) and body["name"] != label:
                    self.reporter.add("NTL308", f"task {label!r} also has `name: {body['name']}`; the key "
                                                f"{label!r} is its label", paths.join(body_src, "name"))
                task = self.task(body, label, body_src, paths.join(norm, len(tasks)), label_src=body_src)
            else:
                label = item.get("name", f"task_{index}")
                task = self.task(item, label, item_src, paths.join(norm, len(tasks)),
                                 label_src=paths.join(item_src, "name"))
            if task is not None:
                tasks.append(task)
        return tasks

    # ------------------------------------------------------------------ one task

    def task(self, body: Mapping[str, Any], label: Any, src: str, norm: str, *,
             label_src: str) -> dict[str, Any] | None:
        self.origins.add(norm, src)
        self.origins.add(paths.join(norm, "name"), label_src)
        if not isinstance(label, str) or not label.strip():
            self.reporter.add("NTL305", f"task label {label!r} must be a non-empty string", label_src)
            return None
        if label == "previous":
            self.reporter.add("NTL305", "`previous` is reserved for `jump: {to: previous}`", label_src)
            return None
        rejected = reject_task_keys(body, src, self.reporter)
        kind = body.get("kind")
        if kind is None:
            if "type" not in rejected:
                self.reporter.add("NTL301", f"task {label!r} has no `kind`", src)
            return None
        key_src: dict[str, str] = {}
        if kind == "workbook":
            resolved = self.from_workbook(body, src)
            if resolved is None:
                return None
            # keys the entry supplies are reported where the entry writes them
            entry_src = paths.join(paths.join("workbook", self.workbook[body["name"]][0]), "tool")
            key_src = {k: paths.join(entry_src, k) for k in resolved if k not in body}
            body, kind = resolved, resolved["kind"]
        elif isinstance(kind, str) and kind in NOETL_TOOL_KINDS:
            code, message, fix = tool_kind_message(kind)
            self.reporter.add(code, message, paths.join(src, "kind"), value=True, fix=fix)
            return None
        elif not isinstance(kind, str) or kind not in KNOWN_TOOL_KINDS:
            self.reporter.add("NTL302", f"unknown tool kind {kind!r}{did_you_mean(kind, ALL_KINDS)}; known: "
                                        f"{', '.join(ALL_KINDS)}", paths.join(src, "kind"), value=True)
            return None
        if rejected:
            return None
        return self.canonical(body, label, kind, src, norm, key_src=key_src)

    def canonical(self, body: Mapping[str, Any], label: str, kind: str, src: str, norm: str, *,
                  key_src: Mapping[str, str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": label, "kind": kind}
        spec = body.get("spec")
        if spec is not None:
            spec_src, spec_norm = paths.join(src, "spec"), paths.join(norm, "spec")
            self.origins.add(spec_norm, spec_src)
            if isinstance(spec, Mapping) and "policy" in spec:
                spec = dict(spec)
                spec["policy"] = normalize_task_policy(spec["policy"], paths.join(spec_src, "policy"),
                                                       paths.join(spec_norm, "policy"), self.reporter,
                                                       self.origins)
            out["spec"] = spec
        out.update(collect_patches(body, src, norm, other="set_vars", reporter=self.reporter,
                                   origins=self.origins))
        if "output" in body:
            self._output(out, body["output"], paths.join(src, "output"))
        config = {k: v for k, v in body.items() if k not in _TASK_FIELDS or (k == "name" and kind in NAMED_KINDS)}
        key_src = {**(key_src or {}), **self._timeout_phases(kind, out, config, src, norm)}
        check_keys(kind, config, src, self.reporter, key_src=key_src)
        if kind == "http" and "endpoint" in config:
            if "url" in config:
                self.reporter.add("NTL308", "both `url` and `endpoint` are set; `endpoint` is ignored",
                                  paths.join(src, "endpoint"))
                config.pop("endpoint")
            else:
                config["url"] = config.pop("endpoint")
                self.origins.add(paths.join(paths.join(norm, "config"), "url"), paths.join(src, "endpoint"))
        self.origins.add(paths.join(norm, "config"), src)
        for key, where in (key_src or {}).items():   # a workbook entry's settings: where it writes them
            if key in config:
                self.origins.add(paths.join(paths.join(norm, "config"), key), where)
        out["config"] = config
        return out

    def _timeout_phases(self, kind: str, out: dict[str, Any], config: dict[str, Any], src: str,
                        norm: str) -> dict[str, str]:
        """An http task's ``spec.timeout: {connect, read}`` (NoETL's documented shape) is the
        tool's phase timeouts: moved to its ``timeout`` setting, where the tool applies them
        (``spec.timeout`` as a number stays the attempt's limit). Returns the moved key's source."""
        spec = out.get("spec")
        if kind != "http" or not isinstance(spec, Mapping) or not isinstance(spec.get("timeout"), Mapping):
            return {}
        timeout_src = paths.join(paths.join(src, "spec"), "timeout")
        out["spec"] = {k: v for k, v in spec.items() if k != "timeout"}
        if "timeout" in config:
            self.reporter.add("NTL308", "both the task's `timeout` and `spec.timeout` are set; `spec.timeout` is "
                                        "ignored", timeout_src, fix="keep one of the two")
            return {}
        config["timeout"] = spec["timeout"]
        self.origins.add(paths.join(paths.join(norm, "config"), "timeout"), timeout_src)
        return {"timeout": timeout_src}

    def step_output(self, tasks: list[dict[str, Any]], block: Any, src: str) -> None:
        """A step's ``output:`` (NoETL's result block for the step's result) is its last task's:
        that task's result is the step's. The task's own ``output:`` wins key by key."""
        if tasks:
            self._output(tasks[-1], block, src)
        else:
            normalize_output(block, src, self.reporter)  # still report what the block gets wrong

    def _output(self, out: dict[str, Any], block: Any, src: str) -> None:
        """NoETL 5.x ``output:``: onto ``spec.result`` and pipeline-local names (``task_output``);
        ``spec.result`` written beside it wins key by key, as does the task's own ``set:``."""
        result, names = normalize_output(block, src, self.reporter)
        spec = dict(out.get("spec") or {}) if isinstance(out.get("spec") or {}, Mapping) else None
        if spec is not None and result:
            given = spec.get("result")
            spec["result"] = {**result, **given} if isinstance(given, Mapping) else (given or result)
            out["spec"] = spec
        if names:
            out["set_vars"] = {**names, **(out.get("set_vars") or {})}

    # ------------------------------------------------------------------ workbook

    def from_workbook(self, body: Mapping[str, Any], src: str) -> dict[str, Any] | None:
        ref = body.get("name")
        if ref not in self.workbook:
            hint = did_you_mean(ref, self.workbook)
            known = ", ".join(self.workbook) or "none"
            self.reporter.add("NTL306", f"no workbook entry named {ref!r}{hint} (entries: {known})",
                              paths.join(src, "name") if "name" in body else src)
            return None
        index, entry = self.workbook[ref]
        entry_src = paths.join(paths.join("workbook", index), "tool")
        tool = entry.get("tool")
        if not isinstance(tool, Mapping) or not isinstance(tool.get("kind"), str):
            self.reporter.add("NTL307", f"workbook entry {ref!r} has no `tool` with a `kind`", entry_src)
            return None
        if tool["kind"] not in KNOWN_TOOL_KINDS:
            why = ("a workbook entry cannot refer to another workbook entry" if tool["kind"] == "workbook"
                   else f"unknown tool kind {tool['kind']!r}")
            self.reporter.add("NTL307", f"workbook entry {ref!r}: {why}", paths.join(entry_src, "kind"))
            return None
        merged = copy.deepcopy(dict(tool))
        merged.pop("name", None)
        for key, value in body.items():
            if key in ("kind", "name"):
                continue
            if key == "input" and isinstance(value, Mapping) and isinstance(merged.get("input"), Mapping):
                merged["input"] = {**merged["input"], **value}
            else:
                merged[key] = value
        return merged
