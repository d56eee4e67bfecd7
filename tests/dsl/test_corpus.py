"""The conformance corpus of real users' playbooks (tests/corpus/noetl, see its INDEX.md).

Files the strict NoETL parser rejects (P column ``REJ``) must be rejected here for the
same reason; every other file must load with no error.
"""

from __future__ import annotations

import re

import pytest

from noetl_temporal.dsl import load_playbook, validate_file
from noetl_temporal.dsl.models import KNOWN_TOOL_KINDS

from .helpers import CORPUS, codes

FILES = sorted(p.name for p in CORPUS.glob("*.yaml"))

# File -> the codes that state the reason its source gives for rejecting it.
REJECTED = {
    "nn_reject_type_field.yaml": {"NTL209", "NTL210"},       # "'type' field is not allowed"; url outside tool
    "nn_reject_next_string.yaml": {"NTL501"},                # "next must use canonical router format"
    "nn_reject_tool_without_kind.yaml": {"NTL301"},          # "must have 'kind' field"
    "e2e_should_error_tool_is_required.yaml": {"NTL210", "NTL211"},  # command outside tool; end has no tool
    "nn_end_step_without_tool.yaml": {"NTL211"},             # "Missing 'tool' field"
}

# Warnings that are right for a file (anything else is a regression).
EXPECTED_WARNINGS = {
    # step1 has no `next`, so the separate `end` step is never reached (INDEX.md says the
    # Python engine never runs it either).
    "e2e_implicit_end_routing.yaml": ["NTL505"],
    # NoETL keys this runtime does not act on: said, not silently dropped (docs/tools.md)
    "e2e_playbook_composition.yaml": ["NTL312"],            # `task:` on a playbook task
    "e2e_user_profile_scorer.yaml": ["NTL312"] * 5,         # `assert:` on its workbook python tasks
}


def _rejected_in_index() -> set[str]:
    rejected = set()
    for line in (CORPUS / "INDEX.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].endswith(".yaml") and re.match(r"^REJ/", cells[-1]):
            rejected.add(cells[0])
    return rejected


def test_rejected_files_match_the_index():
    assert _rejected_in_index() == set(REJECTED)


@pytest.mark.parametrize("name", FILES)
def test_corpus_file(name):
    found = validate_file(CORPUS / name)
    errors = {d.code for d in found if d.is_error}
    warnings = [d.code for d in found if not d.is_error]
    if name in REJECTED:
        assert errors == REJECTED[name], [str(d) for d in found]
        assert all(d.line is not None and d.path for d in found if d.is_error)
    else:
        assert errors == set(), [str(d) for d in found]
        assert warnings == EXPECTED_WARNINGS.get(name, []), [str(d) for d in found]


@pytest.mark.parametrize("name", [n for n in FILES if n not in REJECTED])
def test_corpus_file_normalizes_fully(name):
    pb = load_playbook(CORPUS / name).playbook
    for step in pb.workflow:
        assert step.tool, step.step
        labels = [t.name for t in step.tool]
        assert len(labels) == len(set(labels))
        for task in step.tool:
            assert task.kind in KNOWN_TOOL_KINDS  # workbook references are resolved
            assert not ({"set", "name", "kind", "spec"} & set(task.config))


def test_corpus_workbook_and_policy_details():
    scorer = load_playbook(CORPUS / "e2e_user_profile_scorer.yaml").playbook.step_by_name()
    task = scorer["score_age"].tool[0]
    assert (task.name, task.kind) == ("calculate_age_factor", "python")
    assert task.config["input"] == {"age": "{{ extract_user_data.age }}"}
    assert "age_val = float(age)" in task.config["code"]

    pft = load_playbook(CORPUS / "e2e_pft_flow_jump_break.yaml").playbook.step_by_name()
    slots = pft["process_pft_action_batches"]
    assert [t.name for t in slots.tool] == ["claim_batch", "fetch_batch", "save_batch"]
    assert slots.loop.spec.mode == "parallel" and slots.loop.spec.max_in_flight == 16
    claim, fetch, save = slots.tool
    assert claim.spec.policy.rules[0].then.do == "break"
    assert set(claim.spec.policy.rules[1].then.set_iter) == {"data_type", "batch_id", "patient_ids_csv",
                                                             "patient_count"}
    assert (fetch.spec.policy.rules[0].then.do, fetch.spec.policy.rules[0].then.attempts) == ("retry", 3)
    assert (save.spec.policy.rules[1].then.do, save.spec.policy.rules[1].then.to) == ("jump", "claim_batch")
    assert pft["check_results"].set_ctx == {"final_check_status": "{{ output.data.rows[0].status }}"}

    canonical = load_playbook(CORPUS / "e2e_v10_canonical_example.yaml").playbook
    admit = canonical.workflow[0].spec.policy.admit
    assert [(r.when, r.allow) for r in admit.rules] == [("{{ enabled }}", True), (None, False)]
    transform = canonical.step_by_name()["process_data"].tool[1]
    assert transform.spec.policy.rules[0].when is None
    assert transform.spec.policy.rules[0].then.set_ctx == {"transform_done": True}


def test_corpus_rejections_carry_positions():
    found = validate_file(CORPUS / "nn_reject_next_string.yaml")
    assert [(d.code, d.line, d.col, d.path) for d in found] == [("NTL501", 12, 11, "workflow[0].next")]
    found = validate_file(CORPUS / "e2e_should_error_tool_is_required.yaml")
    assert [(d.code, d.line, d.col) for d in found] == [("NTL210", 29, 5), ("NTL211", 39, 5)]
    assert codes(validate_file(CORPUS / "nn_reject_type_field.yaml")) == ["NTL209", "NTL210"]
