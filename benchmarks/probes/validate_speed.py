"""How fast ``noetl-temporal validate`` checks a large playbook, next to libyaml alone.

    python -m benchmarks.probes.validate_speed [--sizes 0.5,1,2,5] [--rounds 3]

For each size (MB) it writes the generated playbook of tests/dsl/test_yaml_loader.py (small
steps, each with a shell command and a guarded arc: two templates per 160 bytes), then
times, median of the rounds: the CLI end to end as a subprocess (wall and its CPU), and
``yaml.load`` with ``CSafeLoader`` in this process (CPU), the floor a YAML check cannot go
under. Prints a markdown table (docs/performance.md, "Validation speed").
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

STEP = ('  - step: s{i}\n    tool: {{kind: shell, cmd: "echo {{{{ ctx.a }}}} {i} padding padding padding padding"}}'
        '\n    next: {{arcs: [{{step: s{j}, when: "{{{{ ctx.x == {i} }}}}"}}]}}')


def big_playbook(size: int) -> tuple[str, int]:
    """A valid playbook of at least ``size`` characters and its number of steps."""
    lines = ["apiVersion: noetl.io/v2", "kind: Playbook", "metadata: {name: big}", "workflow:"]
    total, i = sum(map(len, lines)), 0
    while total < size:
        lines.append(STEP.format(i=i, j=i + 1))
        total += len(lines[-1])
        i += 1
    lines.append(f"  - step: s{i}\n    tool: {{kind: noop}}")
    return "\n".join(lines) + "\n", i


def _cli(path: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one ``noetl-temporal validate``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "validate", str(path)],
                   check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _libyaml(text: str, collect: bool) -> float:
    """CPU s of ``yaml.load(text, Loader=CSafeLoader)``, with Python's cyclic collector on
    (as a plain load runs) or paused (as validation runs it)."""
    gc.collect()
    if not collect:
        gc.disable()
    started = time.process_time()
    yaml.load(text, Loader=yaml.CSafeLoader)
    spent = time.process_time() - started
    gc.enable()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.5,1,2,5")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print("| size | steps | validate wall | validate CPU | MB/s (wall) | MB/s (CPU) "
          "| CSafeLoader CPU, GC on | GC paused | validate CPU ÷ CSafeLoader (GC paused) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (float(s) for s in args.sizes.split(",")):
            text, steps = big_playbook(int(size * 1_000_000))
            path = Path(tmp) / "big.yaml"
            path.write_text(text, encoding="utf-8")
            runs = [_cli(path) for _ in range(args.rounds)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            parse = statistics.median(_libyaml(text, True) for _ in range(args.rounds))
            paused = statistics.median(_libyaml(text, False) for _ in range(args.rounds))
            mb = len(text) / 1e6
            print(f"| {mb:.1f} MB | {steps:,} | {wall:.2f} s | {cpu:.2f} s | {mb / wall:.2f} | {mb / cpu:.2f} "
                  f"| {parse:.2f} s | {paused:.2f} s | {cpu / paused:.1f} |")


if __name__ == "__main__":
    main()
