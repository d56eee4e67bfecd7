"""``GET /executions/{id}/view``: a web page that draws the playbook and marks its steps live.

The graph is laid out and drawn server-side (SVG) from the definition pinned in the
execution's input, so the page shows exactly what this execution runs; a small inline
script follows ``/events/stream`` and colours the steps. No CDN, nothing to install.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from noetl_temporal.dsl.models import Playbook
from noetl_temporal.graphview import graph_view
from noetl_temporal.graphview.page import execution_page
from noetl_temporal.observe import read_status
from noetl_temporal.temporal import control

from ..deps import ClientDep, ExecutionId, SettingsDep
from ..errors import responses

router = APIRouter(tags=["executions"])


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
    status = await read_status(client, execution_id, settings.event_store)  # 404 for unknown ids
    inp = await control.read_input(client, execution_id)
    playbook = Playbook.model_validate(inp.playbook)
    page = execution_page(graph_view(playbook), execution_id, state=status["state"], source=inp.source,
                          access_token=access_token)
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})
