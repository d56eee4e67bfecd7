"""The ``redrive`` row of ``python -m benchmarks`` (``benchmarks/redrive.py``, issue 41): its
chain is a valid playbook that fails at its last step, the row runs on a small chain against
the dev server (one tool, the rest reused), and the report prints it."""

from __future__ import annotations

import pytest

from benchmarks import compare, redrive, report
from noetl_temporal.dsl import load_playbook_text


def test_the_chain_is_a_valid_playbook_whose_only_tool_process_is_its_last_step():
    loaded = load_playbook_text(redrive.chain_yaml(redrive.STEPS), source="benchmarks:redrive")
    assert not loaded.warnings
    steps = loaded.playbook.workflow
    assert len(steps) == 1000 and steps[-1].step == "s1000"
    assert [task.kind for step in steps for task in step.tool if task.kind != "noop"] == ["python"]


def test_the_row_is_a_workload_of_the_command_line():
    assert compare.parse(["--workloads", "redrive", "--quick"]).workloads == ["redrive"]
    assert "redrive" in compare.parse([]).workloads


@pytest.mark.temporal
async def test_the_row_measures_a_redrive_that_runs_one_tool(temporal, tmp_path):
    result = await redrive.measure(temporal.address, steps=30, rounds=2, scratch=tmp_path)
    assert result["tools"] == [1, 1] and result["reused"] == 29
    assert len(result["rerun_s"]) == 2 and all(0 < s < 60 for s in result["completed_s"])
    table = redrive.markdown(result)
    assert "| 30 | 29 |" in table and "Redrive of a 30-step execution" in table
    text = report.markdown({"started": 0, "duration": 1, "rounds": 1, "quick": True, "servers": {}, "rows": [],
                            "load_average": (0, 0, 0), "cpus": 2, "redrive": result})
    assert table in text
