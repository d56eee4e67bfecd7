"""Request-scoped access to the app's settings, Temporal client and catalog.

Why dependencies: routes stay one screen long, and tests replace nothing: they build
the app with :func:`api.app.create_app` and real objects.

Why every one is ``async def`` although none awaits: FastAPI runs a plain ``def``
dependency in its thread pool, a hand-off to a thread and back per dependency per request
(three on a start), which under a burst of starts cost more of the API's CPU than the
reads themselves.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Path, Request
from temporalio.client import Client

from noetl_temporal.client.control import NotFound
from noetl_temporal.store.catalog import Catalog

from .settings import Settings, TemporalLink

__all__ = ["settings_of", "link_of", "client_of", "catalog_of", "execution_id_param", "EXECUTION_ID_RE",
           "SettingsDep", "LinkDep", "ClientDep", "CatalogDep", "ExecutionId"]

#: printable, no whitespace or '/', at most 255 characters: anything else cannot be an execution
EXECUTION_ID_RE = re.compile(r"^[^\s/\x00-\x1f\x7f]{1,255}$")


async def settings_of(request: Request) -> Settings:
    return request.app.state.settings


async def link_of(request: Request) -> TemporalLink:
    return request.app.state.link


async def client_of(request: Request) -> Client:
    return await request.app.state.link.client()


async def catalog_of(request: Request) -> Catalog:
    return request.app.state.catalog


async def execution_id_param(execution_id: Annotated[str, Path(description="the execution id (= Temporal workflow id)")]) -> str:
    """The path's execution id; one that cannot exist is a 404 without asking Temporal."""
    if not EXECUTION_ID_RE.match(execution_id):
        raise NotFound(f"no execution {execution_id[:80]!r}")
    return execution_id


SettingsDep = Annotated[Settings, Depends(settings_of)]
LinkDep = Annotated[TemporalLink, Depends(link_of)]
ClientDep = Annotated[Client, Depends(client_of)]
CatalogDep = Annotated[Catalog, Depends(catalog_of)]
ExecutionId = Annotated[str, Depends(execution_id_param)]
