"""Where the NoETL playbooks the tests use live: in this repository, under tests/corpus/.

They were copied in (tests/corpus/README.md says from where, at which commit, under which
licence) so that a fresh clone runs the same suite as CI; no test reads outside the
repository (tests/test_self_contained.py keeps it so).
"""

from __future__ import annotations

from pathlib import Path

#: tests/corpus: the copied playbooks and their licences
ROOT = Path(__file__).resolve().parents[1] / "corpus"
#: real users' v10 playbooks with an INDEX of their features (NoETL e2e and unit tests)
NOETL = ROOT / "noetl"
#: the whole fixture set of the public noetl/e2e repository
NOETL_E2E = ROOT / "noetl-e2e"
