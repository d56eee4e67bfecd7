"""The playbook catalog: register (validated, versioned), list, read.

Why the database calls run in a thread pool: the catalog is synchronous (sqlite3 /
psycopg), and a slow database must not stall the event loop that streams events.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.concurrency import run_in_threadpool

from noetl_temporal.store.catalog import NotFound, path_problem

from ..deps import CatalogDep
from ..errors import responses
from ..json_numbers import ParsedBodyRoute
from ..models import MAX_INT, CatalogItem, CatalogList, CatalogPlaybook, Registered, RegisterPlaybook

router = APIRouter(tags=["catalog"], route_class=ParsedBodyRoute)  # the body parsed once


@router.post("/catalog", response_model=Registered, status_code=201,
             responses={200: {"model": Registered, "description": "same content as the latest version: "
                                                                 "that version, nothing new stored"},
                        **responses(413, 422, 503)},
             summary="Register a playbook (validated); each new content gets the next version")
async def register(body: RegisterPlaybook, response: Response,
                   catalog: CatalogDep) -> Registered:
    result = await run_in_threadpool(catalog.register, body.content)
    if not result["created"]:
        response.status_code = 200
    response.headers["Location"] = f"/catalog/{result['path']}?version={result['version']}"
    return Registered(**result)


@router.get("/catalog", response_model=CatalogList, responses=responses(503),
            summary="Registered playbooks, one entry per path")
async def list_catalog(catalog: CatalogDep) -> CatalogList:
    return CatalogList(items=[CatalogItem(**i) for i in await run_in_threadpool(catalog.list)])


@router.get("/catalog/{path:path}", response_model=CatalogPlaybook, responses=responses(404, 422, 503),
            summary="A registered playbook: the latest version, or ?version=N")
async def get_playbook(path: str, catalog: CatalogDep,
                       version: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None) -> CatalogPlaybook:
    problem = path_problem(path)
    if problem:  # cannot be registered, so it is not there; say why
        raise NotFound(f"playbook {path[:80]!r} is not in the catalog: {problem}")
    return CatalogPlaybook(**await run_in_threadpool(catalog.get_entry, path, version))
