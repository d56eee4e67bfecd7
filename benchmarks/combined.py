"""The one table of both anchors and both modes (docs/performance.md, "The table: both
anchors, both modes"), from a default run's JSON and an ``--in-worker`` run's:

    python -m benchmarks.combined benchmarks/results/latest.json benchmarks/results/latest-in-worker.json

Why a table of its own: the default run has the isolating anchor but no in-worker playbook,
the in-worker run the reverse; issue 30's targets span both. Each ratio is over its own
run's hand-written median (the in-worker run has a hand-written side of its own, shown in
brackets), so two runs' drift does not enter a ratio.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .report import MIB, ratio_of, seconds, targets

__all__ = ["combined_table"]


def _ratio(pb: dict[str, Any], anchor: dict[str, Any], key: str) -> str:
    r = ratio_of(pb.get(key), anchor.get(key))
    return f"{r:.2f}" if r is not None else "–"


def _rows_by_key(run: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["workload"], r["server"]): r for r in run["rows"]}


def combined_table(default: dict[str, Any], in_worker: dict[str, Any]) -> str:
    """Markdown: per workload and server of the default run, the sides' medians, the three
    ratios issue 30 sets targets for, and the peak RSS of each mode against its anchor."""
    hw_t, iso_t, iw_t = targets("handwritten"), targets("isolated"), targets("handwritten", in_worker=True)
    lines = [f"| workload | server | hand-written | hand-written, isolating | playbook, default | "
             f"playbook, `in_worker` (its run's hand-written) | default / hw (≤ {hw_t['time']:.2f}) | "
             f"default / iso (≤ {iso_t['time']:.2f}) | `in_worker` / hw (≤ {iw_t['time']:.2f}) | "
             f"peak RSS MiB hw / default / `in_worker` (default ≤ {hw_t['memory']:.1f}×) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    other = _rows_by_key(in_worker)
    order = {w: i for i, w in enumerate(dict.fromkeys(r["workload"] for r in default["rows"]))}
    for row in sorted(default["rows"], key=lambda r: (order[r["workload"]], r["server"] != "stock")):
        hw, iso, pb = (row.get(k) or {} for k in ("handwritten", "isolated", "playbook"))
        twin = other.get((row["workload"], row["server"])) or {}
        ihw, ipb = twin.get("handwritten") or {}, twin.get("playbook") or {}
        mib = "–" if not (hw.get("rss") and pb.get("rss")) else (
            f"{hw['rss'] / MIB:.0f} / {pb['rss'] / MIB:.0f} / "
            + (f"{ipb['rss'] / MIB:.0f}" if ipb.get("rss") else "–")
            + f" ({_ratio(pb, hw, 'rss')}×, {_ratio(ipb, ihw, 'rss')}×)")
        cells = [row["title"], row["server"], seconds(hw.get("median")), seconds(iso.get("median")),
                 seconds(pb.get("median")),
                 f"{seconds(ipb.get('median'))} ({seconds(ihw.get('median'))})",
                 f"**{_ratio(pb, hw, 'median')}**", f"**{_ratio(pb, iso, 'median')}**",
                 f"**{_ratio(ipb, ihw, 'median')}**", mib]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.combined", description=__doc__.split("\n\n")[0])
    parser.add_argument("default", type=Path, help="a default run's JSON (python -m benchmarks)")
    parser.add_argument("in_worker", type=Path, help="an --in-worker run's JSON (python -m benchmarks --in-worker)")
    args = parser.parse_args(argv)
    print(combined_table(json.loads(args.default.read_text(encoding="utf-8")),
                         json.loads(args.in_worker.read_text(encoding="utf-8"))), end="")


if __name__ == "__main__":
    main()
