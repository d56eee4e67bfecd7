"""A python task's large result, end to end: its process writes it, the worker moves it
into the result store, the next task reads it through the reference (issue 38)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.temporal


async def test_a_large_python_result_is_stored_and_read_by_the_next_task(run_yaml, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "results"
    monkeypatch.setenv("NOETL_RESULT_STORE", str(root))
    report = await run_yaml("""
    workflow:
      - step: pipeline
        tool:
          - name: make
            kind: python
            code: |
              result = {"rows": [{"i": i, "pad": "é" * 100} for i in range(20000)]}
          - name: measure
            kind: python
            input:
              doc: "{{ make }}"
            code: |
              result = {"rows": len(doc["rows"]), "last": doc["rows"][-1]["i"], "pad": doc["rows"][0]["pad"][:3]}
    """)
    assert report.state == "COMPLETED", report.error
    done = {e["entity_id"]: e["payload"]["outcome"] for e in report.events if e["event_type"] == "task.done"}
    ref = done["make"]["result"]
    assert ref["kind"] == "result_ref" and ref["store"] == "fs" and ref["meta"]["bytes"] > 2_000_000
    assert set(ref) == {"kind", "ref", "store", "meta", "extracted"}
    assert done["make"].get("result_ref") == ref
    assert done["measure"]["result"] == {"rows": 20000, "last": 19999, "pad": "ééé"}
    stored = [e for e in report.events if e["event_type"] == "result.stored"]
    assert len(stored) == 1 and stored[0]["payload"]["result_ref"]["ref"] == ref["ref"]
    assert len(list(root.rglob("*.json"))) == 1


async def test_a_result_over_the_hard_cap_fails_its_step_with_its_size(run_yaml, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOETL_RESULT_STORE", str(tmp_path / "results"))
    monkeypatch.setenv("NOETL_MAX_RESULT_BYTES", "1000000")
    report = await run_yaml("""
    workflow:
      - step: make
        tool:
          kind: python
          code: |
            result = "x" * 3000000
    """)
    assert report.state == "FAILED"
    assert "ResultTooLarge" in report.error and "3,000,002 bytes" in report.error, report.error
    assert "1,000,000" in report.error
    assert not list((tmp_path / "results").rglob("*.json"))
