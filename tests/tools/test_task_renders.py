"""Task-side renders (``tools/task_renders.py``): a task's task-only templates rendered in the
worker's process when every gated filter's input is small, else in a render child. The bombs
themselves (CPU limit, a cancel, the worker's neighbours) are in
tests/fuzz/test_task_side_renders.py."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.task_plans import uses_task_only
from noetl_temporal.errors import ToolError
from noetl_temporal.tools import task_renders


@pytest.fixture
def no_child(monkeypatch):
    async def refuse(request):
        raise AssertionError("a render child was started")

    monkeypatch.setattr(task_renders, "_run_child", refuse)


@pytest.fixture
def child_only(monkeypatch):
    monkeypatch.setattr(task_renders, "IN_PROCESS_BUDGET", -1)


@pytest.mark.parametrize("where", ["here", "child"])
async def test_only_the_picked_strings_render_with_the_context(where, request):
    request.getfixturevalue("no_child" if where == "here" else "child_only")
    config = {"cmd": "echo {{ text | urlize }}", "env": {"A": "{{ keep }}", "B": ["{{ words | wordwrap(7) }}"]},
              "n": 3}
    rendered, values = await task_renders.render_in_child(
        config, uses_task_only, {"text": "see http://example.com", "words": "one two three"}, "s.tool.t")
    assert rendered == {"cmd": 'echo see <a href="http://example.com" rel="noopener">http://example.com</a>',
                        "env": {"A": "{{ keep }}", "B": ["one two\nthree"]}, "n": 3}
    assert [text for text, _ in values] == ["echo {{ text | urlize }}", "{{ words | wordwrap(7) }}"]
    assert config["env"]["B"] == ["{{ words | wordwrap(7) }}"]   # the command's own config is not touched


async def test_a_config_without_task_only_templates_starts_no_child(no_child):
    config = {"cmd": "echo {{ text | upper }}"}
    assert await task_renders.render_in_child(config, uses_task_only, {}, "s.tool.t") == (config, [])


@pytest.mark.parametrize("where", ["here", "child"])
async def test_a_render_error_is_located_at_the_setting(where, request):
    request.getfixturevalue("no_child" if where == "here" else "child_only")
    with pytest.raises(ToolError) as raised:
        await task_renders.render_in_child({"input": {"text": "{{ 'abc' | wordwrap(0) }}"}}, uses_task_only, {},
                                           "s.tool.t")
    assert raised.value.kind == "template" and not raised.value.retryable
    assert str(raised.value).startswith("s.tool.t.input.text: ValueError: invalid width 0")



async def test_the_memory_limit_fails_the_task_located(monkeypatch):
    monkeypatch.setattr(task_renders, "MEMORY_BYTES", 80 << 20)   # the child's interpreter needs ~40 MB
    with pytest.raises(ToolError) as raised:
        await task_renders.render_in_child({"cmd": "{{ big | wordwrap(5) }}"}, uses_task_only,
                                           {"big": "x " * (30 << 20)}, "s.tool.t")
    assert str(raised.value).startswith("s.tool.t: the render went over the task-side render's memory limit (80 MiB)")


async def test_a_large_input_renders_in_the_child(monkeypatch):
    started = []
    real = task_renders._run_child

    async def spy(request):
        started.append(request)
        return await real(request)

    monkeypatch.setattr(task_renders, "_run_child", spy)
    rendered, _ = await task_renders.render_in_child({"cmd": "{{ ('a ' * 5000) | wordwrap(4) }}"}, uses_task_only,
                                                     {}, "s.tool.t")
    assert len(started) == 1 and rendered["cmd"].count("\n") == 2499   # "a a" a line


async def test_a_large_argument_renders_in_the_child_too(monkeypatch):
    """A short text linked with a 9 MB ``target`` builds gigabytes: the gate weighs arguments too."""
    started = []
    real = task_renders._run_child

    async def spy(request):
        started.append(request)
        return await real(request)

    monkeypatch.setattr(task_renders, "_run_child", spy)
    with pytest.raises(ToolError) as raised:
        await task_renders.render_in_child({"cmd": "{{ ('www.a.com ' * 300) | urlize(target='x' * 9000000) }}"},
                                           uses_task_only, {}, "s.tool.t")
    assert len(started) == 1 and str(raised.value).startswith("s.tool.t.cmd: "), str(raised.value)[:300]
