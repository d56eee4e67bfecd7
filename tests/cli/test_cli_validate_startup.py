"""What ``noetl-temporal validate`` loads and keeps: its start-up imports neither the engine
nor the Temporal SDK, and a large valid playbook's result is kept until the process exits
rather than freed (docs/performance.md, "Validation speed")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.dsl.helpers import playbook

REPO = Path(__file__).resolve().parents[2]


def test_validate_imports_neither_the_engine_nor_the_temporal_sdk(tmp_path):
    path = tmp_path / "pb.yaml"
    path.write_text(playbook("workflow:\n  - step: a\n    tool: {kind: noop}\n"))
    child = subprocess.run([sys.executable, "-X", "importtime", "-m", "noetl_temporal.cli", "validate",
                            str(path)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert child.returncode == 0, child.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in child.stderr.splitlines() if "|" in line}
    assert "noetl_temporal.dsl.yaml_loader" in imported   # the probe sees the modules validate uses
    assert not {m for m in imported if m.startswith(("noetl_temporal.engine", "temporalio"))}


_KEPT = """
import gc, sys
import importlib
cli = importlib.import_module("noetl_temporal.cli.main")
from noetl_temporal.dsl import loader
cli._EXITS_WITHOUT_CLEANUP = True   # as console() sets it before its os._exit
code = cli.main(["validate", *sys.argv[1:]])
print(code, len(loader._kept), loader._kept_chars, gc.isenabled())
"""


def test_the_cli_keeps_what_validation_loaded_and_the_collector_runs_again(tmp_path):
    steps = "".join(f"  - step: s{i}\n    tool: {{kind: noop}}\n    next: {{arcs: [{{step: s{i + 1}}}]}}\n"
                    for i in range(1500))
    big = tmp_path / "big.yaml"
    big.write_text(playbook(f"workflow:\n{steps}  - step: s1500\n    tool: {{kind: noop}}\n"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(playbook("workflow:\n  - step: a\n    tool: {kind: nope}\n"))
    child = subprocess.run([sys.executable, "-c", _KEPT, str(big), str(bad)], capture_output=True, text=True,
                           timeout=120, cwd=REPO)
    assert child.returncode == 0, child.stderr[-2000:]
    code, kept, chars, collecting = child.stdout.splitlines()[-1].split()
    # the valid file is kept (the invalid one has no result); the collector is on again
    assert (code, kept, collecting) == ("2", "1", "True") and int(chars) == len(big.read_text())
