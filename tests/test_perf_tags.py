"""Every ``# perf:`` tag names the benchmark that justifies the code it marks.

Code that exists only for speed (a cache, a fast path, a pre-compiled form, a spare process,
collector pacing, a lazy import) carries ``# perf: <what it saves> — benchmark: <names>`` at
its definition, so a maintainer knows what may go when the SDK or Python improves: rerun the
named benchmark without it (docs/performance.md#speed-only-code-and-its-perf-tags). A name is a
row of ``python -m benchmarks`` (a workload's key, ``api``, ``redrive``), a probe
(``probes.fork_floor``: ``python -m benchmarks.probes.fork_floor``) or a benchmark of its own
(``benchmarks.loop_rss``: ``python -m benchmarks.loop_rss``), read from the benchmarks package.
"""

from __future__ import annotations

import ast
import io
import pkgutil
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: where tags are looked for
TAGGED = ("noetl_temporal",)

TAG = re.compile(r"#\s*perf:\s*(?P<saves>.+?)\s+—\s+benchmark:\s*(?P<names>.+?)\s*$")


@cache
def benchmark_names() -> frozenset[str]:
    """Every name a tag may give, from the benchmarks package itself."""
    import benchmarks
    import benchmarks.probes
    from benchmarks.compare import API, REDRIVE
    from benchmarks.workloads import workloads

    rows = {w.key for w in workloads()} | {API, REDRIVE}
    probes = {f"probes.{m.name}" for m in pkgutil.iter_modules(benchmarks.probes.__path__)}
    runnable = {
        f"benchmarks.{m.name}"
        for m in pkgutil.iter_modules(benchmarks.__path__)
        if not m.ispkg and _has_main(Path(benchmarks.__path__[0]) / f"{m.name}.py")
    }
    return frozenset(rows | probes | runnable)


def _has_main(path: Path) -> bool:
    """A benchmark of its own runs as ``python -m benchmarks.NAME``: it defines ``main``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "main" for n in tree.body)


def perf_comments() -> Iterator[tuple[str, int, str]]:
    """(file, line, comment) of every comment that starts with ``perf:``."""
    for folder in TAGGED:
        for path in sorted((REPO / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT and re.match(r"#\s*perf:", token.string):
                    yield path.relative_to(REPO).as_posix(), token.start[0], token.string


def problems(comment: str) -> list[str]:
    """What is wrong with one ``# perf:`` comment (nothing: an empty list)."""
    tag = TAG.match(comment)
    if tag is None:
        return ["not of the form '# perf: <what it saves> — benchmark: <names>'"]
    names = [name.strip() for name in tag["names"].split(",")]
    return [f"no benchmark named {name!r}" for name in names if name not in benchmark_names()]


def test_every_perf_tag_names_a_benchmark_that_exists() -> None:
    found = list(perf_comments())
    assert len(found) >= 30, "the speed-only code is tagged (docs/performance.md lists it)"
    wrong = [f"{path}:{line}: {why}" for path, line, comment in found for why in problems(comment)]
    assert not wrong, "\n".join(wrong) + f"\n(known: {', '.join(sorted(benchmark_names()))})"


def test_the_names_come_from_the_benchmarks() -> None:
    names = benchmark_names()
    assert {"par_loop", "fast_path", "api", "redrive"} <= names  # rows
    assert {"probes.fork_floor", "probes.validate_speed"} <= names  # probes
    assert "benchmarks.loop_rss" in names  # its own command
    assert "benchmarks.workloads" not in names  # a helper, not a benchmark


def test_a_wrong_tag_fails() -> None:
    assert problems("# perf: a fork per task — benchmark: probes.fork_floor, par_loop") == []
    assert problems("# perf: a fork per task — benchmark: probes.no_such_probe") == [
        "no benchmark named 'probes.no_such_probe'"
    ]
    assert problems("# perf: a fork per task") != []
