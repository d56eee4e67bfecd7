"""``GET /executions/{id}/view``: a web page that draws the playbook and marks its steps live.

The graph is laid out and drawn server-side (SVG) from the definition pinned in the
execution's input, so the page shows exactly what this execution runs. The server draws
each step in the state it knows (the same detail as ``GET /executions/{id}``, and the
events so far); a small inline script follows ``/events/stream`` from there. No CDN,
nothing to install.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from noetl_temporal.client import control
from noetl_temporal.client.close_status import TERMINAL_STATES
from noetl_temporal.client.observe import read_events
from noetl_temporal.client.step_offers import offered_controls
from noetl_temporal.dsl.models import Playbook
from noetl_temporal.graphview import graph_view
from noetl_temporal.graphview.page import execution_page
from noetl_temporal.graphview.redrive import REDRIVABLE, redrive_fragment
from noetl_temporal.graphview.states import WATCHED_TYPES, first_paint

from ..deps import ClientDep, ExecutionId, SettingsDep
from ..errors import responses

router = APIRouter(tags=["executions"])

#: events the first paint reads at most (a longer run's page goes on from the stream)
FIRST_PAINT_EVENTS = 20_000


def _json_errors(*codes: int) -> dict[int | str, dict]:
    """The usual error entries, documented as JSON although this route's answer is HTML."""
    return {code: {"description": entry["description"],
                   "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
            for code, entry in responses(*codes).items()}


@router.get("/executions/{execution_id}/view", response_class=HTMLResponse,
            responses={200: {"description": "an HTML page: the step graph, marked live from the event stream"},
                       **_json_errors(404, 503)},
            summary="A web page drawing the playbook's step graph, with each step's state live")
async def view(execution_id: ExecutionId, client: ClientDep, settings: SettingsDep,
               access_token: Annotated[str | None, Query(
                   max_length=4096, description="the API token, for browsers (passed on to the event stream)")] = None,
               ) -> HTMLResponse:
    info, detail = await control.read_detail(client, execution_id)  # 404 for unknown ids
    state = control.shown_state(info, detail)
    inp = await control.read_input(client, execution_id, info.run_id)
    view = graph_view(Playbook.model_validate(inp.playbook))
    events = await read_events(client, execution_id, store=settings.event_store, types=list(WATCHED_TYPES),
                               limit=FIRST_PAINT_EVENTS)
    painted = first_paint([n.name for n in view.nodes], detail, events,
                          frozenset(n.name for n in view.nodes if n.discards))
    finished = state in TERMINAL_STATES
    # Approvals waiting for a person: only a live workflow knows them, and it has just answered
    # its detail query (an empty detail: no worker answered, so neither would a status query).
    waiting = await control.waiting_approvals(client, execution_id) if detail and not finished else None
    # The per-step controls that apply now, as the update validators decide (docs/approvals.md);
    # the page asks again as the run moves, so a running execution's page has the section even
    # when no step takes a control yet (or no worker answered in time)
    offers = ((await offered_controls(client, execution_id) if detail else None) or []) if not finished else None
    # A redrive names its origin (its input's plan) and what it reused; an old execution its
    # redrives (execution.redriven, appended to its stored events): docs/operations.md.
    store = settings.event_store
    noted = await asyncio.to_thread(store.read, execution_id, types=["execution.redriven"], limit=20) \
        if store is not None and state in REDRIVABLE else []
    redriven_by = [str(e["payload"]["redriven_by"]) for e in noted if (e.get("payload") or {}).get("redriven_by")]
    controls = redrive_fragment(steps=[n.name for n in view.nodes], state=state, recorded=detail.get("steps") or {},
                                redriven_from=(inp.redrive or {}).get("from_execution_id"), redriven_by=redriven_by)
    page = execution_page(view, execution_id, state=state, source=inp.source, access_token=access_token,
                          painted=painted, event_count=int(detail.get("event_count") or painted.last_seq),
                          finished=finished, waiting=waiting, controls=controls, scripts=("redrive.js",),
                          step_offers=offers)
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})
