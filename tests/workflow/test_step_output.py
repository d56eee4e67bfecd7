"""NoETL's step-level `output:` block and the `artifact` tool's `put`/`get` on the dev server.

NoETL's own test_output_select fixture runs as written and gives its own verdict, PASSED: the
step's result (257 KB, over NoETL's 64 KiB budget that its `output:` block brings) is stored,
its `output_select` fields and `_ref` are read by the next step, and `artifact get` hands the
whole body back under `data`. A playbook then writes a stored result to a file with
`artifact put` and reads it back with `artifact get` (docs/tools.md, "`artifact`")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.dsl.e2e_fates import E2E

pytestmark = pytest.mark.temporal

OUTPUT_SELECT = E2E / "fixtures/playbooks/test_output_select.yaml"


@pytest.fixture(autouse=True)
def result_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results"
    monkeypatch.setenv("NOETL_RESULT_STORE", str(root))
    return root


async def test_noetls_output_select_fixture_passes_its_own_check(run_yaml, result_store: Path) -> None:
    report = await run_yaml(OUTPUT_SELECT.read_text(encoding="utf-8"))
    assert report.state == "COMPLETED", report.error
    assert report.steps["start"]["result"]["kind"] == "result_ref"  # stored, as NoETL stores it
    verified = report.steps["verify_extracted_fields"]["result"]
    assert (verified["status_received"], verified["count_received"], verified["was_externalized"]) == (
        "success", 1000, True)
    assert report.steps["process_full_data"]["result"]["total_items"] == 1000
    summary = report.steps["summary"]["result"]
    assert (summary["test_result"], summary["full_data_items_processed"]) == ("PASSED", 1000)


async def test_a_step_output_on_a_small_result_leaves_it_inline(run_yaml) -> None:
    report = await run_yaml("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: small_output}
        workflow:
          - step: start
            tool: {kind: python, code: "result = {'status': 'ok', 'n': 3}"}
            output: {output_select: [status], store: {kind: disk}}
            next: {spec: {mode: exclusive}, arcs: [{step: check}]}
          - step: check
            tool:
              kind: python
              input: {status: "{{ start.status }}", has_ref: "{{ start._ref is defined }}",
                      store: "{{ start._store | default('none') }}"}
              code: "result = {'status': status, 'has_ref': has_ref, 'store': store}"
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["check"]["result"] == {"status": "ok", "has_ref": False, "store": "none"}


async def test_artifact_put_then_get_round_trips_a_stored_result(run_yaml, tmp_path: Path) -> None:
    target = tmp_path / "artifacts" / "items.json"
    report = await run_yaml("""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {name: artifact_round_trip}
        workload: {target: ""}
        workflow:
          - step: start
            tool:
              kind: python
              code: "result = {'items': [{'id': i, 'pad': 'x' * 100} for i in range(3000)]}"
            output: {output_select: [items]}
            next: {spec: {mode: exclusive}, arcs: [{step: save}]}
          - step: save
            tool:
              kind: artifact
              action: put
              uri: "artifact://localfs{{ workload.target }}"
              data: "{{ start }}"
            next: {spec: {mode: exclusive}, arcs: [{step: load}]}
          - step: load
            tool:
              - name: load_artifact
                kind: artifact
                action: get
                input: {uri: "{{ save.uri }}"}
              - name: count
                kind: python
                input: {data: "{{ load_artifact.data }}", store: "{{ start._store }}"}
                code: "result = {'count': len(data['items']), 'last': data['items'][-1]['id'], 'store': store}"
    """, payload={"target": str(target)})
    assert report.state == "COMPLETED", report.error
    saved = report.steps["save"]["result"]
    assert (saved["status"], saved["compressed"], saved["uri"]) == (
        "success", True, f"artifact://localfs{target}.gz")
    on_disk = json.loads(gzip.decompress(Path(f"{target}.gz").read_bytes()))
    assert len(on_disk["items"]) == 3000
    assert report.steps["load"]["result"] == {"count": 3000, "last": 2999, "store": "disk"}
