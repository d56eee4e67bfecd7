"""The benchmark's results as a Markdown table (printed and written) and as JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

__all__ = ["write_report", "markdown", "TARGETS"]

# Issue 11's targets: playbook / hand-written at most this, per workload and setting.
TARGETS = {"time": 1.10, "events": 1.25, "memory": 1.5}
MIB = 1 << 20


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _seconds(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.2f} s" if x >= 0.995 else f"{x:.3f} s"


def _pair(hw: Any, pb: Any, fmt, ratio: float | None) -> str:
    text = f"{fmt(hw)} / {fmt(pb)}"
    return text + (f" ({ratio:.2f}×)" if ratio is not None else "")


def ratios(row: dict[str, Any]) -> dict[str, float | None]:
    hw, pb = row.get("handwritten") or {}, row.get("playbook") or {}
    return {"time": _ratio(pb.get("median"), hw.get("median")),
            "events": _ratio(pb.get("events"), hw.get("events")),
            "memory": _ratio(pb.get("rss"), hw.get("rss")),
            "cpu": _ratio(pb.get("cpu"), hw.get("cpu")),
            "pss": _ratio(pb.get("pss"), hw.get("pss"))}


def _missed(row: dict[str, Any], r: dict[str, float | None]) -> str:
    if row.get("error") or row.get("na"):
        return "–"
    missed = [name for name, limit in TARGETS.items() if r[name] is not None and r[name] > limit]
    return ", ".join(missed) or "none"


def _row(row: dict[str, Any]) -> str:
    hw, pb = row.get("handwritten") or {}, row.get("playbook") or {}
    r = ratios(row)
    mib = lambda b: f"{b / MIB:.0f}" if b else "–"  # noqa: E731
    events = lambda n: str(n) if n is not None else "–"  # noqa: E731
    cpu = lambda s: f"{s:.2f}" if s is not None else "–"  # noqa: E731
    ratio = f"**{r['time']:.2f}**" if r["time"] is not None and not row.get("na") else "n/a"
    cells = [row["title"], row["server"], _seconds(hw.get("median")), _seconds(pb.get("median")), ratio,
             _pair(hw.get("events"), pb.get("events"), events, r["events"]),
             _pair(hw.get("rss"), pb.get("rss"), mib, r["memory"]),
             _pair(hw.get("pss"), pb.get("pss"), mib, r["pss"]),
             _pair(hw.get("cpu"), pb.get("cpu"), cpu, r["cpu"]), _missed(row, r)]
    if row.get("error"):
        cells[-1] = f"error: {row['error'][:160]}"
    elif row.get("na"):
        cells[-1] = f"n/a: {row['na']}"
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown(results: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(results["started"]))
    servers = "; ".join(f"`{name}`: {' '.join(args) or 'no extra arguments'}"
                        for name, args in results["servers"].items())
    load = ", ".join(f"{x:.1f}" for x in results["load_average"])
    lines = [
        f"Measured {when}, {results['rounds']} round(s) per side (median), {results['cpus']} CPUs, "
        f"load average at the end {load}, {results['duration']:.0f} s in all"
        + (" — **quick smoke run: small sizes, not figures to compare**" if results["quick"] else "")
        + (" — **the playbooks' python tasks ran `in_worker: true` (no process per task, not the default)**"
           if results.get("in_worker") else "")
        + f". Dev servers: {servers}.",
        "",
        "| workload | server | hand-written | playbook | ratio | history events hw / pb | "
        "peak RSS MiB hw / pb | peak PSS MiB hw / pb | worker CPU s/round hw / pb | targets missed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {w: i for i, w in enumerate(dict.fromkeys(r["workload"] for r in results["rows"]))}
    for row in sorted(results["rows"], key=lambda r: (order[r["workload"]], r["server"] != "stock")):
        lines.append(_row(row))
    lines += ["", "Targets (issue 11): ratio ≤ " + f"{TARGETS['time']:.2f}, history events ≤ "
              f"{TARGETS['events']:.2f}×, peak RSS of the worker with its tool processes ≤ {TARGETS['memory']:.1f}×."]
    return "\n".join(lines) + "\n"


def write_report(results: dict[str, Any], out: Path) -> str:
    text = markdown(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    for row in results["rows"]:
        row["ratios"] = ratios(row)
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return text
