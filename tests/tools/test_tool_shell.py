"""The shell tool runs real /bin/sh processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, _proc, run_tool
from tests.support.processes import wait_dead


async def sh(call: ToolCall, **config) -> dict:
    return await run_tool("shell", config, call)


async def test_ok(call: ToolCall) -> None:
    out = await sh(call, cmd="echo hello; echo oops >&2")
    assert out["status"] == "ok", out
    assert out["result"]["stdout"] == "hello\n"
    assert out["result"]["stderr"] == "oops\n"
    assert out["result"]["returncode"] == 0
    assert out["result"]["stdout_truncated"] is False
    assert out["shell"] == {"returncode": 0}


async def test_command_alias(call: ToolCall) -> None:
    out = await sh(call, command="echo step_a")
    assert out["result"]["stdout"] == "step_a\n"


async def test_nonzero_exit(call: ToolCall) -> None:
    out = await sh(call, cmd="echo partial; echo 'line 1' >&2; echo 'the real reason' >&2; exit 3")
    assert out["status"] == "error"
    err = out["error"]
    assert err["kind"] == "shell" and err["code"] == 3 and err["retryable"] is False
    assert "exited with status 3" in err["message"]
    assert err["message"].rstrip().endswith("the real reason")
    assert out["shell"] == {"returncode": 3}
    assert out["result"]["stdout"] == "partial\n"  # output is still there for policies


async def test_cmds_run_in_order_and_stop_at_first_failure(call: ToolCall, tmp_path: Path) -> None:
    call.workdir = str(tmp_path)
    out = await sh(call, cmds=["echo one > log", "echo two >> log", "false", "echo three >> log"])
    assert out["status"] == "error"
    assert out["error"]["details"]["command_index"] == 2
    assert "command #3" in out["error"]["message"]
    assert (tmp_path / "log").read_text() == "one\ntwo\n"
    ok = await sh(call, cmds=["echo a", "echo b"])
    assert ok["result"]["stdout"] == "a\nb\n"


async def test_env_merged_and_stringified(call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOETL_INHERITED", "yes")
    out = await sh(call, cmd='echo "$FOO|$N|$FLAG|$OBJ|$NOETL_INHERITED"',
                   env={"FOO": "bar", "N": 5, "FLAG": True, "OBJ": {"a": 1}})
    assert out["result"]["stdout"] == 'bar|5|true|{"a": 1}|yes\n'
    isolated = await sh(call, cmd='echo "[$NOETL_INHERITED][$FOO]"; ls / > /dev/null', env={"FOO": "x"},
                        inherit_env=False)
    assert isolated["status"] == "ok", isolated
    assert isolated["result"]["stdout"] == "[][x]\n"


async def test_cwd(call: ToolCall, tmp_path: Path) -> None:
    out = await sh(call, cmd="pwd", cwd=str(tmp_path))
    assert out["result"]["stdout"].strip() == str(tmp_path)
    bad = await sh(call, cmd="pwd", cwd=str(tmp_path / "missing"))
    assert bad["error"]["kind"] == "config"


async def test_timeout_kills_process_group(call: ToolCall, tmp_path: Path) -> None:
    call.workdir = str(tmp_path)
    t0 = time.monotonic()
    out = await sh(call, cmd="sleep 60 & echo $! > bg.pid; echo started; sleep 60", timeout=0.5)
    assert time.monotonic() - t0 < 15   # 0.5 s asked, 60 s if ignored (docs/testing.md)
    err = out["error"]
    assert err["kind"] == "timeout" and err["retryable"] is True
    assert out["result"]["stdout"] == "started\n"
    assert await wait_dead(int((tmp_path / "bg.pid").read_text()))


async def test_a_command_handed_to_the_fork_server_never_runs_twice(call: ToolCall, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An error once the fork server has the command is the task's. The tool's own deadline
    raises ``TimeoutError``, an ``OSError``: it was taken for a fork server that did not
    answer, and the command ran a second time under a reaper (seen as "started" twice at
    load 11, docs/testing.md). Here the deadline passes as the command ends, every time."""
    from noetl_temporal.tools.python import forkserver

    if not forkserver.enabled():
        pytest.skip("the python fork server needs Linux")
    real_wait = _proc.wait_child

    async def failing_wait(proc, *args, **kwargs):
        await real_wait(proc, *args, **kwargs)   # the command ran to its end
        raise TimeoutError   # ... as its deadline passed

    monkeypatch.setattr(_proc, "wait_child", failing_wait)
    runs = tmp_path / "runs"
    out = await sh(call, cmd=f"echo ran >> {runs}")
    assert runs.read_text() == "ran\n", out
    assert out["status"] == "error"


async def test_term_ignoring_command_is_killed(call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_proc, "KILL_GRACE", 0.2)
    t0 = time.monotonic()
    out = await sh(call, cmd="trap '' TERM; while true; do sleep 0.05; done", timeout=0.3)
    assert out["error"]["kind"] == "timeout"
    assert time.monotonic() - t0 < 15


async def test_background_child_holding_stdout_does_not_hang(call: ToolCall, monkeypatch) -> None:
    monkeypatch.setattr(_proc, "DRAIN_GRACE", 0.3)
    t0 = time.monotonic()
    out = await sh(call, cmd="(sleep 30; echo late) & echo now")
    assert out["status"] == "ok"
    assert out["result"]["stdout"].startswith("now")
    assert time.monotonic() - t0 < 10   # 0.3 s grace, 30 s if it waited


async def test_large_output_truncated(call: ToolCall) -> None:
    out = await sh(call, cmd="head -c 3000000 /dev/zero | tr '\\0' 'a'; echo; echo END")
    res = out["result"]
    assert res["stdout_truncated"] is True
    assert len(res["stdout"]) < 1_100_000
    assert res["stdout"].rstrip().endswith("END")  # the tail is kept


async def test_missing_command_is_config_error(call: ToolCall) -> None:
    out = await sh(call)
    assert out["error"]["kind"] == "config"
    out = await sh(call, cmds=["echo ok", 5])
    assert out["error"]["kind"] == "config"


async def test_heartbeat(call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_proc, "HEARTBEAT_INTERVAL", 0.1)
    beats: list = []
    call.heartbeat = beats.append
    out = await sh(call, cmd="sleep 0.5")
    assert out["status"] == "ok"
    assert len(beats) >= 2 and beats[-1]["tool"] == "shell"


async def test_cancellation_kills_the_command(call: ToolCall, tmp_path: Path) -> None:
    call.workdir = str(tmp_path)
    task = asyncio.ensure_future(sh(call, cmd="echo $$ > pid; sleep 60"))
    pid_file = tmp_path / "pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(int(pid_file.read_text()))
    assert os.path.exists(pid_file)



@pytest.mark.parametrize("word, secret", [
    ("tok={s}", "k3y-V4lue-0123"),
    ('"tok={s}"', "k3y-V4lue-0123"),
    ("'tok={s}'", "k3y V4lue $HOME `x` \\ 0123"),   # single quotes: the shell takes it literally
    ("tok='a'{s}\"b\"", "k3y-V4lue-0123"),
])
async def test_a_secret_reaches_the_command_through_the_environment_not_argv(call: ToolCall, tmp_path: Path,
                                                                            word: str, secret: str) -> None:
    """Issue 24: a keychain value inside ``cmd`` was visible in ``ps`` while the task ran."""
    from noetl_temporal.keychain import Scrubber, secret_values

    call.secrets = Scrubber(secret_values({"api": {"token": secret}})).secrets
    word = word.format(s=secret)
    expected = subprocess.run(["sh", "-c", f"printf '%s' {word}"], capture_output=True, text=True).stdout
    assert secret in expected
    cmd = f"printf '%s' {word} > {tmp_path}/seen; tr '\\0' ' ' < /proc/$$/cmdline > {tmp_path}/argv"
    await run_tool("shell", {"cmd": cmd}, call)
    assert (tmp_path / "seen").read_text() == expected   # the command saw the very same string
    argv = (tmp_path / "argv").read_text()
    assert "NOETL_SECRET_1" in argv and secret not in argv, argv


async def test_a_rendered_command_that_is_itself_a_secret_keeps_its_shape(call: ToolCall) -> None:
    """The keychain also masks each value a template rendered to: for a shell task, the whole
    ``cmd``. Only the secret inside it moves to the environment."""
    from noetl_temporal.keychain import Scrubber, secret_values

    cmd = "printf '%s' 'k3y-V4lue-0123' | wc -c"
    call.secrets = Scrubber(secret_values({"api": {"token": "k3y-V4lue-0123"}}, rendered=[cmd])).secrets
    assert cmd in call.secrets
    out = await sh(call, cmd=cmd)
    assert out["result"]["stdout"].strip() == "14"
