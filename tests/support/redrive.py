"""The redrive tests' playbook: ten python steps that each append a line to a counter file
of their own per invocation, so the files prove which steps ran (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path

STEPS = [f"s{i}" for i in range(1, 11)]


def ten_steps(name: str = "ten-steps") -> str:
    """Step s7 fails while ``<dir>/flag`` is missing; s3 puts a fresh token in ctx, which s8
    writes into its counter file (the same ctx after a redrive shows as the same token)."""
    lines = [f"metadata: {{name: {name}}}", "workflow:"]
    for index, step in enumerate(STEPS):
        code = [
            "import pathlib, uuid",
            "d = pathlib.Path(dir)",
            "with open(d / name, 'a') as f: f.write(str(token) + '\\n')",
        ]
        if step == "s7":
            code.append("if not (d / 'flag').exists(): raise RuntimeError('flag file missing')")
        code.append("result = {'step': name, 'token': uuid.uuid4().hex}")
        block = "\n".join(f"        {c}" for c in code)
        lines += [
            f"  - step: {step}",
            "    tool:",
            "      kind: python",
            f"      input: {{dir: \"{{{{ workload.dir }}}}\", name: {step}, token: \"{{{{ ctx.token | default('-') }}}}\"}}",
            "      code: |",
            block,
        ]
        if step == "s3":
            lines.append("    set: {ctx: {token: \"{{ s3.token }}\"}}")
        if index + 1 < len(STEPS):
            # only on success: an arc without `when` continues the flow after a failure too
            lines.append(f"    next: {{arcs: [{{step: {STEPS[index + 1]}, when: \"{{{{ event.name == 'step.done' }}}}\"}}]}}")
    return "\n".join(lines) + "\n"


def counts(directory: Path) -> dict[str, int]:
    """Invocations per step (lines in its counter file)."""
    return {step: len((directory / step).read_text().splitlines()) if (directory / step).exists() else 0
            for step in STEPS}
