"""Task policy rules and step admission rules → their canonical rule lists.

Source shapes accepted (all seen in users' playbooks, see docs/dialect-aliases.md):

* ``- when: "{{ g }}"`` + ``then: {...}``            (canonical)
* ``- else: {then: {...}}``                            (seed form of the fallback)
* ``- else: {do: continue, set: ...}``                 (action written straight under else)
* ``- else:`` + ``then: {...}`` as siblings            (``else`` left empty by indentation)
* ``when: true`` / ``false`` (YAML booleans)           → ``"{{ true }}"`` / ``"{{ false }}"``

Actions: ``set:`` is split (pipeline-local names go to ``set_vars``), ``backoff:
fixed`` (and ``constant``) is ``none``, and ``do: retry`` without ``attempts`` gets 3
(the engine's default too). Admission rules ``{when, then: {allow}}`` become
``{when, allow}``; ``when: None`` marks the fallback in both lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import paths
from .diagnostics import Reporter, kind_of
from .origins import Origins
from .patches import PATCH_KEYS, collect_patches

__all__ = ["normalize_task_policy", "normalize_admit", "guard", "DEFAULT_RETRY_ATTEMPTS"]

DEFAULT_RETRY_ATTEMPTS = 3
_BACKOFF_ALIASES = {"fixed": "none", "constant": "none"}


def guard(value: Any) -> Any:
    """YAML booleans as guards are written as the equivalent template."""
    if isinstance(value, bool):
        return "{{ true }}" if value else "{{ false }}"
    return value


class _Rules:
    def __init__(self, reporter: Reporter, origins: Origins) -> None:
        self.reporter = reporter
        self.origins = origins

    def action(self, then: Any, src: str, norm: str) -> dict[str, Any] | None:
        self.origins.add(norm, src)
        if then is None:
            return {}
        if not isinstance(then, Mapping):
            self.reporter.add("NTL401", f"`then` must be a mapping such as `{{do: continue}}`, not "
                                        f"{kind_of(then)}", src, value=True)
            return None
        out = {k: v for k, v in then.items() if k not in PATCH_KEYS}
        out.update(collect_patches(then, src, norm, other="set_vars", reporter=self.reporter,
                                   origins=self.origins))
        backoff = out.get("backoff")
        if isinstance(backoff, str) and backoff in _BACKOFF_ALIASES:
            out["backoff"] = _BACKOFF_ALIASES[backoff]
        if out.get("do") == "retry" and out.get("attempts") is None:
            out["attempts"] = DEFAULT_RETRY_ATTEMPTS
        return out

    def fallback_body(self, rule: Mapping[str, Any], src: str, code: str) -> tuple[Any, str] | None:
        """``(then, then_source_path)`` of an ``else`` rule in any accepted shape."""
        body = rule["else"]
        if "when" in rule:
            self.reporter.add(code, "a rule cannot have both `when` and `else`", src)
            return None
        if body is None:
            return rule.get("then"), paths.join(src, "then")
        if not isinstance(body, Mapping):
            self.reporter.add(code, f"`else` must be a mapping such as `{{then: ...}}`, not "
                                    f"{kind_of(body)}", paths.join(src, "else"), value=True)
            return None
        if "then" in rule:
            self.reporter.add(code, "`then` is given both inside and beside `else`", paths.join(src, "then"))
            return None
        else_src = paths.join(src, "else")
        if "then" in body:
            for key in body:
                if key != "then":
                    self.reporter.add("NTL902", f"unknown key {key!r} in `else`", paths.join(else_src, key))
            return body["then"], paths.join(else_src, "then")
        return body, else_src

    def task_rule(self, rule: Any, src: str, norm: str) -> dict[str, Any] | None:
        self.origins.add(norm, src)
        if not isinstance(rule, Mapping):
            self.reporter.add("NTL401", f"a policy rule must be a mapping, not {kind_of(rule)}", src)
            return None
        if "else" in rule:
            found = self.fallback_body(rule, src, "NTL401")
            if found is None:
                return None
            for key in rule:
                if key not in ("else", "then"):
                    self.reporter.add("NTL902", f"unknown key {key!r} in an `else` rule", paths.join(src, key))
            then = self.action(found[0], found[1], paths.join(norm, "then"))
            return None if then is None else {"when": None, "then": then}
        if "then" not in rule:
            self.reporter.add("NTL401", "the rule has no `then:` action", src)
            return None
        out = {k: v for k, v in rule.items() if k not in ("when", "then")}  # leftovers: model reports
        then = self.action(rule["then"], paths.join(src, "then"), paths.join(norm, "then"))
        if then is None:
            return None
        out.update(when=guard(rule.get("when")), then=then)
        return out

    def rule_list(self, rules: Any, src: str, norm: str, one: Any, code: str) -> list[dict[str, Any]]:
        self.origins.add(norm, src)
        if rules is None:
            return []
        if not isinstance(rules, list):
            self.reporter.add(code, f"`rules` must be a list, not {kind_of(rules)}", src, value=True)
            return []
        out: list[dict[str, Any]] = []
        fallback_at: int | None = None
        for index, rule in enumerate(rules):
            rule_src = paths.join(src, index)
            if fallback_at is not None and index == fallback_at + 1:
                self.reporter.add("NTL406", f"rules after the fallback rule [{fallback_at}] never match",
                                  rule_src)
            done = one(rule, rule_src, paths.join(norm, len(out)))
            if done is None:
                continue
            if done.get("when") is None and fallback_at is None:
                fallback_at = index
            out.append(done)
        return out

    def admit_rule(self, rule: Any, src: str, norm: str) -> dict[str, Any] | None:
        self.origins.add(norm, src)
        if not isinstance(rule, Mapping):
            self.reporter.add("NTL407", f"an admission rule must be a mapping, not {kind_of(rule)}", src)
            return None
        if "else" in rule:
            found = self.fallback_body(rule, src, "NTL407")
            if found is None:
                return None
            when, (then, then_src) = None, found
            extra = [k for k in rule if k not in ("else", "then")]
        else:
            when, then, then_src = guard(rule.get("when")), rule.get("then"), paths.join(src, "then")
            extra = [k for k in rule if k not in ("when", "then", "allow")]
            if "allow" in rule and "then" not in rule:  # already canonical
                then, then_src = {"allow": rule["allow"]}, src
        for key in extra:
            self.reporter.add("NTL902", f"unknown key {key!r} in an admission rule", paths.join(src, key))
        if not isinstance(then, Mapping) or "allow" not in then:
            self.reporter.add("NTL407", "an admission rule needs `then: {allow: true|false}`", then_src)
            return None
        for key in then:
            if key != "allow":
                self.reporter.add("NTL902", f"unknown key {key!r} in an admission `then` (only `allow`)",
                                  paths.join(then_src, key))
        self.origins.add(paths.join(norm, "allow"), paths.join(then_src, "allow"))
        return {"when": when, "allow": then["allow"]}


def normalize_task_policy(policy: Any, src: str, norm: str, reporter: Reporter,
                          origins: Origins) -> Any:
    """``task.spec.policy`` → ``{rules: [...]}`` (other keys are left for the model to judge)."""
    origins.add(norm, src)
    if not isinstance(policy, Mapping):
        return policy  # the model reports the type
    helper = _Rules(reporter, origins)
    out = dict(policy)
    if "rules" in policy:
        out["rules"] = helper.rule_list(policy["rules"], paths.join(src, "rules"), paths.join(norm, "rules"),
                                        helper.task_rule, "NTL401")
    for hook, instead in HOOKS.items():
        if hook in out:
            del out[hook]
            reporter.add("NTL409", f"`policy.{hook}` is a NoETL 5.x hook with no defined meaning to carry over: "
                                   "NoETL's schema leaves it an untyped value and none of NoETL's e2e fixtures "
                                   "uses it, so noetl-temporal does not guess one", paths.join(src, hook), fix=instead)
    return out


#: NoETL 5.x task policy hooks -> the pipeline form that does the same, here (docs/semantics.md)
HOOKS = {
    "before": "put the work in a task before this one in the step's `tool:` list (a pipeline runs in order)",
    "after": "put the work in a task after this one in the step's `tool:` list; it reads this task's result "
             "as `_prev`",
    "finally": "put the clean-up in a task after this one and reach it on both outcomes: a rule "
               "`- when: \"{{ output.status == 'error' }}\"` with `then: {do: jump, to: <clean-up task>}` "
               "(success continues to it in order), or route `step.done` and `step.failed` to a clean-up step",
}


def normalize_admit(admit: Any, src: str, norm: str, reporter: Reporter, origins: Origins) -> Any:
    """``step.spec.policy.admit`` → ``{mode, rules: [{when, allow}]}``."""
    origins.add(norm, src)
    if not isinstance(admit, Mapping):
        return admit
    helper = _Rules(reporter, origins)
    out = dict(admit)
    if "rules" in admit:
        out["rules"] = helper.rule_list(admit["rules"], paths.join(src, "rules"), paths.join(norm, "rules"),
                                        helper.admit_rule, "NTL407")
    return out
