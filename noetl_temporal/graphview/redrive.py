"""The execution page's redrive parts (docs/operations.md): a button that redrives a FAILED
or CANCELLED execution, and, on a redrive's page, where it comes from and which steps it
reused (their recorded results, no tool ran) and which it ran again.

Kept apart from :mod:`.page`, which only places the fragment and its script. The script
(``assets/redrive.js``) posts ``POST /executions/{id}/redrive`` (relative to the page, so a
proxy prefix holds) with the API token the page was opened with (``?access_token=``, sent as
``Authorization: Bearer``; it is read from the page's address, never written into the page),
then opens the new execution's page. It follows the run through the events ``live.js``
dispatches (``noetl:event``), so there is one event stream per page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

__all__ = ["redrive_fragment", "REDRIVABLE"]

#: the states a redrive starts from on the page (the API redrives a COMPLETED one with --from too)
REDRIVABLE = ("FAILED", "CANCELLED")


def redrive_fragment(*, steps: Sequence[str], state: str, redriven_from: str | None,
                     recorded: Mapping[str, Any], redriven_by: Sequence[str] = ()) -> str:
    """The header lines: the button (hidden unless ``state`` is redrivable; the script shows
    it when a followed run ends so) and, for a redrive, its origin and what it reused and reran
    so far. ``steps``: the playbook's, in order; ``recorded``: the detail's ``steps``."""
    def records() -> list[tuple[str, Mapping[str, Any]]]:
        return [(name, recorded[name]) for name in steps if isinstance(recorded.get(name), Mapping)]

    reused = [name for name, record in records() if record.get("reused")]
    rerun = [name for name, record in records() if not record.get("reused") and record.get("runs")]
    options = "".join(f'<option value="{escape(name)}">{escape(name)}</option>' for name in steps)
    hidden = "" if state in REDRIVABLE else " hidden"
    parts = [f'<p id="redrive-control"{hidden}><button id="redrive-button" type="button">Redrive</button>'
             f' from <select id="redrive-from"><option value="">where it failed</option>{options}</select>'
             ' <span id="redrive-message"></span></p>']
    if redriven_from is not None:
        parts.append(f'<p id="redrive-origin">redriven from {_link(redriven_from)}'
                     f' · reused (no tool ran): <span id="reused-steps">{_names(reused)}</span>'
                     f' · reran: <span id="rerun-steps">{_names(rerun)}</span></p>')
    if redriven_by:
        parts.append(f'<p id="redriven-by">redriven by {", ".join(_link(new) for new in redriven_by)}</p>')
    config = {"steps": list(steps), "reused": reused, "rerun": rerun, "redrivable": list(REDRIVABLE),
              "redrive": redriven_from is not None}
    parts.append('<script type="application/json" id="noetl-redrive">'
                 + json.dumps(config, separators=(",", ":")).replace("</", "<\\/") + "</script>")
    return "\n".join(parts)


def _link(execution_id: str) -> str:
    # relative to this page (/executions/{id}/view): a proxy prefix holds; the script adds the token
    return (f'<a class="execution-link" href="../{quote(execution_id, safe="")}/view">'
            f"<code>{escape(execution_id)}</code></a>")


def _names(names: list[str]) -> str:
    return escape(", ".join(names)) if names else "none"
