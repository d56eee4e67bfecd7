"""Python task processes start with ``-S`` and run ``site`` themselves, deferring the
``import`` lines of ``.pth`` files to the first import nothing else can satisfy
(``runner.start_site``). Real interpreters, a real user site directory
(``PYTHONUSERBASE``) holding ``.pth`` files of the three kinds found in the wild:
a path line, an import line that installs a finder (as editable installs do), and an
import line that reads ``sitedir`` from the ``site`` frame running it (old namespace
packages' ``-nspkg.pth``).
"""

from __future__ import annotations

import site
import sysconfig
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, aclose_clients, run_tool
from noetl_temporal.tools.python import forkserver, spawn

HOOK = textwrap.dedent("""\
    import importlib.abc, importlib.util, sys

    class _Virtual(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            return importlib.util.spec_from_loader(name, self) if name == "noetl_pth_virtual" else None
        def create_module(self, spec):
            return None
        def exec_module(self, module):
            module.answer = 42

    def install():
        sys.meta_path.append(_Virtual())
""")

PROBE = textwrap.dedent("""\
    import sys
    before = {m: m in sys.modules for m in ("noetl_pth_hook", "pathlib")}
    import noetl_pth_plain
    plain_first = "noetl_pth_hook" in sys.modules
    import noetl_pth_virtual
    result = {"before": before, "plain": noetl_pth_plain.value, "plain_runs_no_hook": not plain_first,
              "virtual": noetl_pth_virtual.answer, "hook_ran": "noetl_pth_hook" in sys.modules,
              "nspkg_sitedir": getattr(sys, "noetl_pth_sitedir", None), "exit": callable(exit),
              "no_site": sys.flags.no_site}
""")


@pytest.fixture
def empty_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site directory the task's interpreter reads ``.pth`` files from, empty of ours, in
    a new environment (so a new fork server). Outside a virtualenv: a user site directory
    of our own (``PYTHONUSERBASE``). Inside one (CI's, as a new user installs) user sites are
    off, so the virtualenv's own site-packages, where an editable install's hook lives
    too; every file put there is removed afterwards."""
    if site.ENABLE_USER_SITE:
        base = tmp_path / "userbase"
        sitedir = Path(sysconfig.get_path("purelib", "posix_user", vars={"userbase": str(base)}))
        sitedir.mkdir(parents=True)
        monkeypatch.setenv("PYTHONUSERBASE", str(base))
        yield sitedir
        return
    sitedir = Path(sysconfig.get_path("purelib"))
    before = set(sitedir.iterdir())
    monkeypatch.setenv("NOETL_TEST_SITE", str(tmp_path))  # a new environment: a new fork server
    try:
        yield sitedir
    finally:
        for path in set(sitedir.iterdir()) - before:
            path.unlink()


@pytest.fixture
def user_site(tmp_path: Path, empty_site: Path) -> Path:
    sitedir = empty_site
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "noetl_pth_plain.py").write_text("value = 'from a path line'\n")
    (sitedir / "noetl_pth_hook.py").write_text(HOOK)
    (sitedir / "a-paths.pth").write_text(f"# a comment\n{extra}\n")
    (sitedir / "b-hook.pth").write_text("import noetl_pth_hook; noetl_pth_hook.install()\n")
    (sitedir / "c-nspkg.pth").write_text(
        "import sys; sys.noetl_pth_sitedir = sys._getframe(1).f_locals['sitedir']\n")
    return sitedir


@pytest.mark.parametrize("fork_server", ["1", "0"], ids=["fork-server", "process-per-task"])
async def test_pth_hooks_wait_for_an_import_only_they_can_satisfy(
        user_site: Path, fork_server: str, call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.ENV_SWITCH, fork_server)
    try:
        out = await run_tool("python", {"code": PROBE}, call)
        assert out["status"] == "ok", out
        got = out["result"]
        # nothing of the hooks ran at start-up, nor for an import a path line satisfies
        assert got["before"] == {"noetl_pth_hook": False, "pathlib": False}
        assert got["plain"] == "from a path line" and got["plain_runs_no_hook"]
        # the first import no finder satisfies ran them, in site's own frame, and found the module
        assert got["virtual"] == 42 and got["hook_ran"]
        assert got["nspkg_sitedir"] == str(user_site)
        assert got["exit"] and got["no_site"] == 1  # site's builtins are there; the flag says -S
        # a module nothing provides still fails as usual, once the hooks have run
        missing = await run_tool("python", {"code": "import noetl_pth_nowhere"}, call)
        assert missing["status"] == "error"
        assert "No module named 'noetl_pth_nowhere'" in missing["error"]["message"]
    finally:
        await aclose_clients()  # the fork server of this environment goes with the test


@pytest.mark.parametrize("fork_server", ["1", "0"], ids=["fork-server", "process-per-task"])
async def test_pth_hooks_run_at_start_when_deferring_is_switched_off(
        user_site: Path, fork_server: str, call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.ENV_SWITCH, fork_server)
    monkeypatch.setenv(spawn.LAZY_PTH_SWITCH, "0")  # a plain interpreter: site at start-up
    try:
        out = await run_tool("python", {"code": PROBE}, call)
        assert out["status"] == "ok", out
        got = out["result"]
        assert got["before"]["noetl_pth_hook"] is True  # ran before any import of the task
        assert got["virtual"] == 42 and got["nspkg_sitedir"] == str(user_site) and got["no_site"] == 0
    finally:
        await aclose_clients()


SLOW_HOOK = textwrap.dedent("""\
    import importlib.abc, importlib.util, sys, time

    class _Virtual(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            ours = ("noetl_pth_thread_a", "noetl_pth_thread_b")
            return importlib.util.spec_from_loader(name, self) if name in ours else None
        def create_module(self, spec):
            return None
        def exec_module(self, module):
            module.name = module.__name__

    def install():
        try:  # a hook whose own import misses: a plain miss
            import noetl_pth_absent  # noqa: F401
        except ImportError:
            pass
        time.sleep(0.3)  # long enough for the other thread's import to miss meanwhile
        sys.meta_path.append(_Virtual())
""")

THREADS = textwrap.dedent("""\
    import threading, time
    barrier, got = threading.Barrier(2), {}

    def load(name):
        barrier.wait()
        try:
            got[name] = __import__(name).name
        except ImportError as exc:
            got[name] = f"ImportError: {exc}"

    t0 = time.monotonic()
    threads = [threading.Thread(target=load, args=(n,)) for n in ("noetl_pth_thread_a", "noetl_pth_thread_b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result = {"got": got, "seconds": time.monotonic() - t0}
""")


@pytest.mark.parametrize("fork_server", ["1", "0"], ids=["fork-server", "process-per-task"])
async def test_a_thread_that_misses_while_another_runs_the_hooks_waits_for_them(
        empty_site: Path, fork_server: str, call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads of a task import, at the same moment, two modules only a slow hook
    provides: one runs the hooks (under the interpreter's import lock), the other's
    import goes on to the finder they appended instead of failing."""
    sitedir = empty_site
    (sitedir / "noetl_pth_slow.py").write_text(SLOW_HOOK)
    (sitedir / "slow.pth").write_text("import noetl_pth_slow; noetl_pth_slow.install()\n")
    monkeypatch.setenv(forkserver.ENV_SWITCH, fork_server)
    try:
        out = await run_tool("python", {"code": THREADS}, call)
        assert out["status"] == "ok", out
        assert out["result"]["got"] == {"noetl_pth_thread_a": "noetl_pth_thread_a",
                                        "noetl_pth_thread_b": "noetl_pth_thread_b"}
        assert out["result"]["seconds"] < 5  # a hook's own miss did not block
    finally:
        await aclose_clients()
