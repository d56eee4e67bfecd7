"""Raw playbook data → the canonical dict that :class:`~.models.Playbook` validates.

Every dialect alias users write (docs/dialect-aliases.md) is rewritten here, once, so
the engine sees one spelling of each thing; every refused construct
(:mod:`.rejections`) is reported with its replacement. Each relocated node's source
path is recorded in :class:`~.origins.Origins` so later passes can report positions
in the user's file. Task shapes live in :mod:`.tasks`, rules in :mod:`.policies`,
``set:`` splitting in :mod:`.patches`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import paths
from .diagnostics import Reporter, did_you_mean, kind_of
from .keys import COPIED_STEP_KEYS, ROOT_KEYS, STEP_KEYS
from .models import MAX_CURSOR_PAGE_ROWS
from .noetl_only import NOETL_ROOT_KEYS, NOETL_STEP_KEYS
from .origins import Origins
from .patches import collect_patches
from .policy_rules import guard, normalize_admit
from .rejections import reject_root_keys, reject_step_keys
from .tasks import TaskNormalizer

__all__ = ["normalize", "ROOT_KEYS", "STEP_KEYS", "rewrite_templates"]

API_VERSION = "noetl.io/v2"
#: root containers whose type normalize checks itself (NTL104, before the model sees them)
_ROOT_TYPES: dict[str, type] = {"metadata": dict, "executor": dict, "workload": dict, "spec": dict,
                                "keychain": list, "workbook": list}

_BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
_ITER_INDEX = re.compile(r"\biter\._index\b")


def rewrite_templates(value: Any) -> Any:
    """``iter._index`` → ``iter.index`` inside every ``{{ }}`` / ``{% %}`` block."""
    if isinstance(value, str):
        if "_index" not in value:
            return value
        return _BLOCK.sub(lambda m: _ITER_INDEX.sub("iter.index", m.group(0)), value)
    if isinstance(value, dict):
        return {k: rewrite_templates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_templates(v) for v in value]
    return value


class _Normalizer:
    def __init__(self, raw: Mapping[str, Any], reporter: Reporter) -> None:
        self.raw = raw
        self.reporter = reporter
        self.origins = Origins()
        self.tasks = TaskNormalizer(raw.get("workbook"), reporter, self.origins)

    def root(self) -> dict[str, Any]:
        reject_root_keys(self.raw, self.reporter)
        for key in self.raw:
            if key in NOETL_ROOT_KEYS:
                self.reporter.add("NTL101", f"root `{key}` is a NoETL setting noetl-temporal does not read",
                                  paths.join("", key), fix=NOETL_ROOT_KEYS[key])
            elif key not in ROOT_KEYS and key != "vars":
                self.reporter.add("NTL101", f"unknown root key {key!r}{did_you_mean(key, ROOT_KEYS)}",
                                  paths.join("", key))
        out: dict[str, Any] = {}
        for key in ROOT_KEYS:
            if key == "workflow" or key not in self.raw or self.raw[key] is None:
                continue
            value = self.raw[key]
            want = _ROOT_TYPES.get(key)
            if want is not None and not isinstance(value, want):
                self.reporter.add("NTL104", f"`{key}` must be a {'mapping' if want is dict else 'list'}, "
                                            f"not {kind_of(value)}", key, value=True)
                continue
            out[key] = value
        version = self.raw.get("apiVersion")
        if version is not None and version != API_VERSION:
            self.reporter.add("NTL105", f"apiVersion is {version!r}, expected {API_VERSION!r}", "apiVersion",
                              value=True)
        workflow = self.raw.get("workflow")
        if not isinstance(workflow, list) or not workflow:
            if "workflow" not in self.raw:
                what = "missing"
            elif isinstance(workflow, list):
                what = "an empty list"
            else:
                what = f"{kind_of(workflow)}, not a list of steps"
            self.reporter.add("NTL103", f"`workflow` is {what}", "workflow" if "workflow" in self.raw else "",
                              value=True)
            out["workflow"] = []
            return out
        out["workflow"] = [self.step(item, index) for index, item in enumerate(workflow)]
        return out

    # ------------------------------------------------------------------ steps

    def step(self, raw: Any, index: int) -> Any:
        src = norm = paths.join("workflow", index)
        self.origins.add(norm, src)
        if not isinstance(raw, Mapping):
            self.reporter.add("NTL104", f"a step must be a mapping, not {kind_of(raw)}", src)
            return raw
        name = raw.get("step")
        if not isinstance(name, str) or not name.strip():
            where = paths.join(src, "step") if "step" in raw else src
            self.reporter.add("NTL201", "the step has no `step:` name" if name is None
                              else f"step name {name!r} is not a non-empty string", where)
            name = f"workflow[{index}]"
        rejected = reject_step_keys(raw, src, self.reporter)
        for key in raw:
            if key in NOETL_STEP_KEYS and key not in STEP_KEYS:
                self.reporter.add("NTL203", f"step `{key}` is a NoETL block noetl-temporal does not read",
                                  paths.join(src, key), fix=NOETL_STEP_KEYS[key])
            elif key not in STEP_KEYS and key not in rejected:
                self.reporter.add("NTL203", f"unknown step key {key!r}{did_you_mean(key, STEP_KEYS)}",
                                  paths.join(src, key))
        out: dict[str, Any] = {k: raw[k] for k in COPIED_STEP_KEYS if k in raw and raw[k] is not None}
        if "tool" in raw and raw["tool"] is not None:
            out["tool"] = self.tasks.tool(raw["tool"], name, paths.join(src, "tool"), paths.join(norm, "tool"))
            if raw.get("output") is not None:
                self.tasks.step_output(out["tool"], raw["output"], paths.join(src, "output"))
        elif not rejected & {"type", "kind"}:
            self.reporter.add("NTL211", f"step {name!r} has no `tool`", src)
        if raw.get("spec") is not None:
            out["spec"] = self.step_spec(raw["spec"], paths.join(src, "spec"))
        if raw.get("loop") is not None:
            out["loop"] = self.loop(raw["loop"], paths.join(src, "loop"))
        if raw.get("next") is not None:
            out["next"] = self.router(raw["next"], paths.join(src, "next"))
        out.update(collect_patches(raw, src, norm, other="reject", reporter=self.reporter,
                                   origins=self.origins))
        return out

    def step_spec(self, spec: Any, src: str) -> Any:
        if not isinstance(spec, Mapping):
            return spec  # the model reports the type
        if "next_mode" in spec:
            mode = spec["next_mode"]
            self.reporter.add("NTL212", "`spec.next_mode` is not part of v10", paths.join(src, "next_mode"),
                              fix=f"use `next: {{spec: {{mode: {mode}}}, arcs: [...]}}`")
        out = {k: v for k, v in spec.items() if k != "next_mode"}
        if isinstance(spec.get("policy"), Mapping):
            out["policy"] = self.step_policy(spec["policy"], paths.join(src, "policy"), out)
        return out

    def step_policy(self, policy: Mapping[str, Any], src: str, spec: dict[str, Any]) -> dict[str, Any]:
        """``step.spec.policy``: admission rules rewritten, ``lifecycle`` moved to
        ``spec.lifecycle`` (the one place the engine reads a step's lifecycle), task
        actions refused. Other keys are left for the closed model to judge."""
        out = dict(policy)
        if "admit" in policy:
            out["admit"] = normalize_admit(policy["admit"], paths.join(src, "admit"), paths.join(src, "admit"),
                                           self.reporter, self.origins)
        if "rules" in out:
            del out["rules"]
            self.reporter.add("NTL410", "`rules` under a step's `spec.policy` are task actions (retry, jump, "
                                        "break ...), which a step policy does not hold", paths.join(src, "rules"))
        lifecycle = out.pop("lifecycle", None)
        if lifecycle is not None:
            self.move_lifecycle(lifecycle, src, spec)
        return out

    def move_lifecycle(self, lifecycle: Any, policy_src: str, spec: dict[str, Any]) -> None:
        spec_src = paths.parent(policy_src) or ""
        if spec.get("lifecycle") is not None:
            self.reporter.add("NTL308", "`spec.policy.lifecycle` and `spec.lifecycle` are both given; "
                                        "`spec.lifecycle` is used", paths.join(policy_src, "lifecycle"),
                              fix="keep one of the two")
            return
        spec["lifecycle"] = lifecycle
        self.origins.add(paths.join(spec_src, "lifecycle"), paths.join(policy_src, "lifecycle"))

    # ------------------------------------------------------------------ loop

    def loop(self, loop: Any, src: str) -> Any:
        if not isinstance(loop, Mapping):
            self.reporter.add("NTL603", f"`loop` must be a mapping, not {kind_of(loop)}", src, value=True)
            return loop
        if "cursor" in loop:
            loop = self.cursor_loop(loop, src)
        elif "in" not in loop:
            self.reporter.add("NTL603", "`loop` has no `in:` list", src)
        out = dict(loop)
        spec = out.get("spec")
        if spec is None:
            spec = {}
        elif not isinstance(spec, Mapping):
            return out  # the model reports the type
        spec = dict(spec)
        for key in ("mode", "max_in_flight"):  # loop.mode is an alias of loop.spec.mode
            if key not in loop:
                continue
            value = out.pop(key)
            if key in spec and spec[key] != value:
                self.reporter.add("NTL308", f"`loop.{key}` and `loop.spec.{key}` differ; `loop.spec.{key}` "
                                            f"is used", paths.join(src, key))
                continue
            spec[key] = value
            self.origins.add(paths.join(paths.join(src, "spec"), key), paths.join(src, key))
        mode = spec.get("mode")
        if ("cursor" in out) != (mode == "cursor") and (mode is not None or "cursor" not in out):
            self.reporter.add("NTL335", f"a cursor loop's `spec.mode` is {mode!r}" if "cursor" in out
                              else "`spec.mode: cursor` needs `loop.cursor`",
                              paths.join(src, "mode") if "mode" in loop else paths.join(paths.join(src, "spec"), "mode"),
                              value=True, fix="write `mode: cursor` with `loop.cursor`, and `sequential` or "
                                              "`parallel` with `loop.in`; `spec.max_in_flight` sets how many "
                                              "rows run at once")
        if spec or "spec" in out:
            out["spec"] = spec
        return out

    def cursor_loop(self, loop: Mapping[str, Any], src: str) -> Mapping[str, Any]:
        """``loop.cursor`` (docs/semantics.md, "Cursor loops"): its shape, located; a wrong
        shape is reported here and the cursor dropped, so the model adds no second message."""
        where = paths.join(src, "cursor")
        cursor = loop["cursor"]
        out = dict(loop)
        if "in" in loop:
            self.reporter.add("NTL331", "`loop.cursor` and `loop.in` are both given", where)
            out.pop("cursor")
            return out
        if not isinstance(cursor, Mapping):
            self.reporter.add("NTL332", f"`loop.cursor` must be a mapping, not {kind_of(cursor)}", where, value=True)
            out.pop("cursor")
            return out
        kind = cursor.get("kind")
        if kind not in ("postgres", "duckdb"):
            self.reporter.add("NTL333", f"`loop.cursor.kind` is {kind!r}: cursor loops read postgres or duckdb",
                              paths.join(where, "kind") if "kind" in cursor else where, value="kind" in cursor)
            out.pop("cursor")
        elif not isinstance(cursor.get("claim"), str) or not cursor["claim"].strip():
            self.reporter.add("NTL334", "`loop.cursor` has no `claim:` statement", where)
            out.pop("cursor")
        elif kind == "postgres" and not cursor.get("auth") and not cursor.get("dsn"):
            self.reporter.add("NTL332", "a postgres `loop.cursor` needs `auth:` (a keychain entry)", where,
                              fix="add `auth: <keychain entry>` as for a postgres task (docs/keychain.md)")
            out.pop("cursor")
        spec = loop.get("spec")
        if isinstance(spec, Mapping):
            frame = spec.get("frame")
            rows = frame.get("max_rows") if isinstance(frame, Mapping) else None
            if frame is not None and not isinstance(frame, Mapping):
                self.reporter.add("NTL335", f"`spec.frame` must be a mapping, not {kind_of(frame)}",
                                  paths.join(paths.join(src, "spec"), "frame"), value=True)
            elif rows is not None and (isinstance(rows, bool) or not isinstance(rows, int)
                                       or not 1 <= rows <= MAX_CURSOR_PAGE_ROWS):
                self.reporter.add("NTL335", f"`spec.frame.max_rows` is {rows!r}",
                                  paths.join(paths.join(paths.join(src, "spec"), "frame"), "max_rows"), value=True)
        if "cursor" not in out:
            out["in"] = []   # reported: let the rest of the playbook be checked
        return out

    # ------------------------------------------------------------------ routing

    def router(self, value: Any, src: str) -> Any:
        if isinstance(value, str):
            self.reporter.add("NTL501", f"`next: {value}` is a step name, not a router", src, value=True,
                              fix=self._router_fix(value))
            return None
        if isinstance(value, list):
            self.reporter.add("NTL501", "`next` is a list; v10 routes with `next: {spec, arcs}`", src,
                              value=True, fix=self._router_fix(value))
            return None
        if not isinstance(value, Mapping):
            return value  # the model reports the type
        if "arcs" not in value and ("step" in value or "when" in value):
            self.reporter.add("NTL501", "`next` is a single arc without the `arcs:` list", src,
                              fix=self._router_fix(value))
            return None
        out = dict(value)
        arcs = value.get("arcs")
        if arcs is None:
            out["arcs"] = []
        elif not isinstance(arcs, list):
            self.reporter.add("NTL104", f"`next.arcs` must be a list, not {kind_of(arcs)}",
                              paths.join(src, "arcs"), value=True)
            return None
        else:
            out["arcs"] = [self.arc(arc, paths.join(paths.join(src, "arcs"), i)) for i, arc in enumerate(arcs)]
        return out

    @staticmethod
    def _router_fix(value: Any) -> str:
        targets: list[str] = []
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, str):
                targets.append(item)
            elif isinstance(item, Mapping) and isinstance(item.get("step"), str):
                targets.append(item["step"])
        arcs = ", ".join(f"{{step: {t}}}" for t in targets) or "{step: <name>}"
        return f"write `next: {{spec: {{mode: exclusive}}, arcs: [{arcs}]}}`"

    def arc(self, arc: Any, src: str) -> Any:
        self.origins.add(src, src)
        if not isinstance(arc, Mapping):
            return arc  # the model reports the type
        out = {k: v for k, v in arc.items() if k not in ("set", "set_ctx", "set_iter", "args")}
        if "cond" in out:   # refused by name (NTL324) rather than as an unknown key
            cond = out.pop("cond")
            self.reporter.add("NTL324", f"arc `cond: {cond}` is not read: NoETL 5.3.2 ignores it and takes the "
                                        "arc whatever it says, which is not what the playbook means",
                              paths.join(src, "cond"),
                              fix=f"write `when: \"{{{{ {cond} }}}}\"` (a template) instead of `cond:`")
        if "when" in out:
            out["when"] = guard(out["when"])
        out.update(collect_patches(arc, src, src, other="args", reporter=self.reporter, origins=self.origins))
        return out


def normalize(raw: Mapping[str, Any], reporter: Reporter) -> tuple[dict[str, Any], Origins]:
    """The canonical dict and the origin map; problems go to ``reporter``.

    ``rewrite_templates`` changes only templates holding ``_index`` (the normalizer itself
    writes no template but ``{{ true }}``/``{{ false }}``): when ``reporter.templates`` (the
    parser's list of ``raw``'s templates) has none, the rewrite, a copy of the whole tree, is
    skipped (a sixth of this pass on a large playbook; the canonical dict then shares its
    leaves' containers with ``raw``, which nothing changes)."""
    normalizer = _Normalizer(raw, reporter)
    canonical = normalizer.root()
    templates = reporter.templates
    # perf: a copy of the whole tree when no template holds _index (0.2 s at 5 MB) — benchmark: probes.validate_speed
    if templates is not None and not any("_index" in text for _, text in templates):
        return canonical, normalizer.origins
    return rewrite_templates(canonical), normalizer.origins
