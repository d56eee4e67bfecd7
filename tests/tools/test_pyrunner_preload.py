"""What the fork server prepares once so that no task's process pays for it again
(``runner.preload``), checked in a fresh interpreter started as the fork server is
(``python -S``), with the runner loaded from its bytecode, as an installed package is."""

from __future__ import annotations

import json
import py_compile
import subprocess
import sys
import textwrap
from pathlib import Path

from noetl_temporal.tools.python import runner

PROBE = textwrap.dedent("""\
    import gc, json, marshal, sys, types
    runner = types.ModuleType("_noetl_pyrunner")
    with open(sys.argv[1], "rb") as pyc:
        exec(marshal.loads(pyc.read()[16:]), runner.__dict__)  # as a .pyc loads: nothing compiled

    def ast_types_built():  # the compiler's AST node types, built by the first compile()
        return any(isinstance(o, type) and o.__module__ == "ast" and o.__name__ == "Module"
                   for o in gc.get_objects())

    before = ast_types_built()
    runner.preload()
    print(json.dumps({"before": before, "after": ast_types_built(),
                      "modules": sorted(m for m in ("json", "datetime", "uuid", "inspect", "traceback")
                                        if m in sys.modules)}))
""")


def test_preload_builds_the_compiler_types_and_imports_only_what_tasks_use(tmp_path: Path) -> None:
    pyc = py_compile.compile(runner.__file__, cfile=str(tmp_path / "runner.pyc"), doraise=True)
    done = subprocess.run([sys.executable, "-S", "-B", "-c", PROBE, pyc],
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout)
    # Without preload a task's first compile() would build them in its own process
    # (about 1 ms); whether the runner came from source or a .pyc must not matter.
    assert got["before"] is False and got["after"] is True
    assert got["modules"] == ["datetime", "json", "uuid"]  # inspect/traceback: only on demand
