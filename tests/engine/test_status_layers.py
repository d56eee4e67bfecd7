"""Every status layer's transition table: allowed moves pass, every other pair raises."""

from __future__ import annotations

import itertools

import pytest

from noetl_temporal.engine.status_docs import mermaid
from noetl_temporal.engine.status_layers import (
    TABLES,
    TERMINAL,
    ExecutionStatus,
    StepStatus,
    WorkflowStatus,
    transition,
)
from noetl_temporal.errors import InvalidTransition

ENUMS = {"execution": ExecutionStatus, "workflow": WorkflowStatus, "step": StepStatus}


@pytest.mark.parametrize("layer", sorted(TABLES))
def test_every_pair_is_allowed_exactly_when_in_the_table(layer):
    enum = ENUMS[layer]
    for src, dst in itertools.product(enum, enum):
        if (src, dst) in TABLES[layer]:
            assert transition(layer, src, dst) is dst
        else:
            with pytest.raises(InvalidTransition):
                transition(layer, src, dst)


@pytest.mark.parametrize("layer", sorted(TABLES))
def test_terminal_states_have_no_way_out(layer):
    for (src, _dst) in TABLES[layer]:
        assert src not in TERMINAL[layer]


def test_execution_status_is_exactly_the_five_states():
    assert [s.value for s in ExecutionStatus] == ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"]


@pytest.mark.parametrize("layer", sorted(TABLES))
def test_diagram_lists_every_transition(layer):
    diagram = mermaid(layer)
    for (src, dst) in TABLES[layer]:
        assert f"{src.value} --> {dst.value}" in diagram


def test_docs_status_md_is_generated_from_the_tables():
    from pathlib import Path

    from noetl_temporal.engine.status_docs import render_docs
    doc = Path(__file__).resolve().parents[2] / "docs" / "status.md"
    assert doc.read_text().strip() == render_docs().strip(), ("run: python -c \"from noetl_temporal.engine.status_docs import render_docs; print(render_docs())\""
                                                         " > docs/status.md")
