"""``executor.requires`` (NoETL 5.x): the tool kinds and features a playbook needs.

Checked by ``validate`` against what a noetl-temporal worker runs. A tool kind it does not
register (``tool_kinds``; a worker registers them all) is the error NTL106, naming it, so a
playbook written for another runtime stops before it starts instead of failing at the step
that needs it. A feature name it does not provide is the warning NTL340 and the playbook
runs: NoETL itself never checks ``features`` (its model ``ExecutorRequires.features`` in
noetl/core/dsl/engine/models/executor.py is a free list of strings, and
``_validate_executor`` in noetl/core/dsl/engine/parser/validation.py only checks that it
is a list), so a playbook naming ``ai_meta`` (NoETL's quantum_cudaq fixture) runs there, and
here too (docs/noetl-e2e-fates.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..tool_kinds import LOAD_TIME_KINDS, TOOL_KINDS
from .diagnostics import Reporter, did_you_mean
from .models import Playbook
from .noetl_only import NOETL_TOOL_KINDS, tool_kind_message

__all__ = ["FEATURES", "check_requires"]

#: the features a worker provides, and what each is (docs/semantics.md "executor.requires")
FEATURES: Mapping[str, str] = {
    "result_storage": "large results travel as ResultRefs in a result store (docs/tools.md)",
    "keychain": "secrets resolved in activities, never in workflow history (docs/keychain.md)",
    "loops": "`loop.in` iteration, sequential", "parallel_loops": "`loop.spec.mode: parallel` with max_in_flight",
    "sub_playbooks": "`kind: playbook` as a child workflow", "retries": "task policy `retry` as Temporal retries",
    "admission": "`spec.policy.admit` rules and approval gates", "joins": "inclusive fan-out and joins",
    "pause_resume": "pause and resume an execution", "cancellation": "cancel, with children",
    "continue_as_new": "long executions continue as new", "templated_numbers": "`{{ }}` numbers (NoETL 5.x)",
}


def check_requires(playbook: Playbook, reporter: Reporter) -> None:
    requires = playbook.executor.requires
    if requires is None:
        return
    kinds = (*TOOL_KINDS, *LOAD_TIME_KINDS)
    for i, kind in enumerate(requires.tools):
        if kind in kinds:
            continue
        path = f"executor.requires.tools[{i}]"
        if kind in NOETL_TOOL_KINDS:
            _, message, fix = tool_kind_message(kind)
            reporter.add_normalized("NTL106", f"this playbook requires tool {kind!r}: {message}", path,
                                    value=True, fix=fix)
        else:
            reporter.add_normalized("NTL106", f"this playbook requires tool {kind!r}, which this worker does not "
                                              f"run{did_you_mean(kind, kinds)}; it runs: {', '.join(kinds)}",
                                    path, value=True)
    for i, feature in enumerate(requires.features):
        if feature not in FEATURES:
            reporter.add_normalized("NTL340", f"this playbook requires feature {feature!r}, which no noetl-temporal "
                                              f"worker provides{did_you_mean(feature, FEATURES)}; NoETL does not "
                                              "check feature names and runs it, and so does this runtime: a step "
                                              "that needs more than it has fails at that step; it provides: "
                                              f"{', '.join(FEATURES)}", f"executor.requires.features[{i}]",
                                    value=True)
