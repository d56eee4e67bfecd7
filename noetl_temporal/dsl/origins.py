"""Where each part of the normalized playbook came from in the source.

Normalization moves things (``tool:`` object → ``tool[0]``, ``set: {ctx.x}`` →
``set_ctx.x``, a task's ``url`` → ``config.url``), but model and semantic errors are
found on the normalized form while the user needs the source line. The normalizer
records ``normalized path → source path`` for every node it relocates; any deeper
path resolves through its longest recorded prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import paths

__all__ = ["Origins"]


@dataclass
class Origins:
    table: dict[str, str] = field(default_factory=lambda: {"": ""})

    def add(self, normalized: str, source: str) -> None:
        self.table[normalized] = source

    def resolve(self, normalized: str) -> str:
        try:
            parts = paths.split(normalized)
        except ValueError:
            return normalized
        for cut in range(len(parts), -1, -1):
            prefix = paths.from_parts(parts[:cut])
            if prefix in self.table:
                source = self.table[prefix]
                for part in parts[cut:]:
                    source = paths.join(source, part)
                return source
        return normalized  # pragma: no cover - "" is always recorded
