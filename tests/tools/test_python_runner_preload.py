"""What the fork server prepares once so that no task's process pays for it again
(``runner.preload``), checked in a fresh interpreter started as the fork server is
(``python -S``), with the runner package loaded from its bytecode alone, as an installed
package may be."""

from __future__ import annotations

import compileall
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from noetl_temporal.tools.python import runner

PROBE = textwrap.dedent("""\
    import gc, importlib.util, json, os, sys
    # As the fork server loads it (zygote._load_runner), from .pyc files only: nothing compiled
    init = os.path.join(sys.argv[1], "__init__.pyc")
    spec = importlib.util.spec_from_file_location("_noetl_pyrunner", init, submodule_search_locations=[sys.argv[1]])
    runner = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    assert all(m.__spec__.origin.endswith(".pyc") for n, m in sys.modules.items() if n.startswith("_noetl_pyrunner"))

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
    package = tmp_path / "runner"
    shutil.copytree(Path(runner.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(package, legacy=True, quiet=1)  # each .pyc beside its source ...
    for source in package.glob("*.py"):
        source.unlink()  # ... which goes: a sourceless package
    done = subprocess.run([sys.executable, "-S", "-B", "-c", PROBE, str(package)],
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout)
    # Without preload a task's first compile() would build them in its own process
    # (about 1 ms); whether the runner came from source or a .pyc must not matter.
    assert got["before"] is False and got["after"] is True
    assert got["modules"] == ["datetime", "json", "uuid"]  # inspect/traceback: only on demand
