"""The fate of every file of NoETL's e2e fixture set (tests/corpus/noetl-e2e) here.

``docs/noetl-e2e-fates.md`` is generated from :func:`markdown`
(``python -m tests.dsl.e2e_fates > docs/noetl-e2e-fates.md``); tests/dsl/test_e2e_fates.py
keeps the page equal to what validation says today, so a file whose fate changes (a
playbook that starts or stops validating, or is refused for another reason) fails the test
until the page is regenerated and the change reviewed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from noetl_temporal.dsl import Diagnostic, validate_file
from tests.support.corpus import NOETL_E2E

E2E = NOETL_E2E  # copied into tests/corpus (tests/corpus/README.md)
CONFIG = E2E / "fixtures" / "playbook_test_config.yaml"

# Files of the set that are not playbooks, and what they are.
NOT_PLAYBOOKS = {
    "LICENSE": "the fixture set's licence (Apache-2.0)",
    "README.md": "where the set comes from",
    "fixtures/REGRESSION_TESTING.md": "NoETL's notes on its regression runner",
    "fixtures/playbook_test_config.yaml": "the outcomes NoETL's regression runner expects (last column)",
}


@dataclass(frozen=True)
class Fate:
    path: str  # relative to tests/corpus/noetl-e2e
    valid: bool | None  # None: not a playbook
    errors: tuple[Diagnostic, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()
    note: str = ""

    @property
    def codes(self) -> list[str]:
        return sorted({d.code for d in self.errors})

    def label(self) -> str:
        if self.valid is None:
            return "not a playbook"
        if self.valid:
            return "valid" + (f" (warns {', '.join(sorted({d.code for d in self.warnings}))})"
                              if self.warnings else "")
        return "rejected"

    def reasons(self) -> list[str]:
        """Each distinct error message once, with the line it is first reported at and a count."""
        seen: dict[tuple[str, str], list[Diagnostic]] = {}
        for d in self.errors:
            seen.setdefault((d.code, d.message), []).append(d)
        out = []
        for (code, message), found in seen.items():
            times = f" ({len(found)}×)" if len(found) > 1 else ""
            out.append(f"{code} line {found[0].line}: {message}{times}")
        return out


def playbook_files() -> list[Path]:
    return sorted(p for p in (E2E / "fixtures").rglob("*.yaml") if p != CONFIG)


def fates() -> list[Fate]:
    out = [Fate(name, None, note=note) for name, note in NOT_PLAYBOOKS.items()]
    for path in playbook_files():
        found = validate_file(path)
        errors = tuple(d for d in found if d.is_error)
        warnings = tuple(d for d in found if not d.is_error)
        out.append(Fate(path.relative_to(E2E).as_posix(), not errors, errors, warnings))
    return sorted(out, key=lambda f: f.path)


def expected_by_noetl() -> dict[str, str]:
    """fixture path (relative to the set) -> the execution status NoETL's runner expects."""
    config: dict[str, Any] = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    out = {}
    for entry in config["playbooks"]:
        status = (entry.get("validation") or {}).get("execution_status", "?")
        enabled = "" if entry.get("enabled", True) else " (disabled)"
        out[f"{entry['path']}.yaml"] = f"{status}{enabled}"
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    table = fates()
    expected = expected_by_noetl()
    playbooks = [f for f in table if f.valid is not None]
    valid = [f for f in playbooks if f.valid]
    by_code: dict[str, int] = {}
    for f in playbooks:
        for code in f.codes:
            by_code[code] = by_code.get(code, 0) + 1
    lines = [
        "# NoETL's e2e fixtures: the fate of every file",
        "",
        "Every file of NoETL's own fixture set (`tests/corpus/noetl-e2e`, copied from the public",
        "`noetl/e2e` repository) and what `noetl-temporal validate` does with it: the playbook",
        "validates, or it is rejected with located errors that name the reason. The reasons are",
        "v10 rules (`retry` blocks, a step without a tool: the errors say what to write instead)",
        "and NoETL constructs this project does not run: tools that need a service this machine",
        "cannot have (`snowflake` NTL336, `ducklake` NTL337, `container` NTL338), result tiers on a",
        "cloud (`output.store.kind: gcs` NTL343, `s3` NTL344), other NoETL tools (NTL320), root `tracing`,",
        "each with its fix. See docs/validation-codes.md for the codes.",
        "",
        "This page is generated (`python -m tests.dsl.e2e_fates > docs/noetl-e2e-fates.md`) and",
        "`tests/dsl/test_e2e_fates.py` fails when a file's fate changes.",
        "",
        f"{len(playbooks)} playbooks: {len(valid)} valid, {len(playbooks) - len(valid)} rejected. "
        "Files rejected per code: " + ", ".join(f"{c} {n}" for c, n in sorted(by_code.items())) + ".",
        "The last column is the execution status NoETL's regression runner expects",
        "(`fixtures/playbook_test_config.yaml`), for the files it runs.",
        "",
        "| file | fate | codes | reason | NoETL expects |",
        "|---|---|---|---|---|",
    ]
    for f in table:
        reason = "; ".join(f.reasons()) if f.errors else f.note
        lines.append(f"| `{f.path}` | {f.label()} | {', '.join(f.codes)} | {_cell(reason)} | "
                     f"{expected.get(f.path, '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
