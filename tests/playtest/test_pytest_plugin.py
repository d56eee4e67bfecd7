"""The pytest fixtures of ``noetl_temporal.playtest.pytest_plugin``, used as a user's conftest
would use them, in a pytest run of their own (docs/testing-playbooks.md, "From pytest")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_users_pytest_suite_uses_the_fixtures(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["noetl_temporal.playtest.pytest_plugin"]\n')
    orders = REPO / "examples" / "orders.yaml"
    (tmp_path / "test_orders.py").write_text(textwrap.dedent(f"""\
        ORDERS = {str(orders)!r}

        def test_recovers(playbook_case):
            out = playbook_case(ORDERS, payload={{"order_id": 7}},
                                mocks={{"fetch.get": [{{"error": "503"}}, {{"result": {{"amount": 40}}}}],
                                       "settle": {{"delay": "2h"}}, "charge": {{"result": {{"charged": 40}}}}}})
            assert out.status == "FAILED"          # a plain error is not retried by the policy
            assert out.attempts == {{"fetch.get": 1}}

        def test_expectations(playbook_case):
            out = playbook_case(ORDERS, mocks={{"fetch.get": {{"result": {{"amount": 500}}}}}},
                                expect={{"route": ["start", "fetch", "review", "done"], "ctx": {{"review": True}}}})
            out.raise_failures()
            assert out.results["review"] == {{"queued": 1}}

        def test_failing_expectation(playbook_case):
            out = playbook_case(ORDERS, mocks={{"fetch.get": {{"result": {{"amount": 500}}}}}},
                                expect={{"ctx": {{"review": False}}}})
            out.raise_failures()

        def test_the_example_file(playbook_test_file):
            playbook_test_file({str(REPO / 'examples' / 'tests' / 'orders.test.yaml')!r})
        """))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert "1 failed, 3 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "expect.ctx.review: ctx 'review' differs" in proc.stdout
