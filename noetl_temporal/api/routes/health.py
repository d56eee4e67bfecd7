"""Liveness (``/health``: the process answers) and readiness (``/ready``: Temporal answers).

Why no auth here: orchestrators probe these without credentials, and they reveal
nothing but reachability.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import CatalogDep, LinkDep, SettingsDep
from ..models import Health, Ready

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health, summary="Liveness")
async def health() -> Health:
    return Health(status="ok")


@router.get("/ready", response_model=Ready, responses={503: {"model": Ready, "description": "Temporal unreachable"}},
            summary="Readiness: Temporal is reachable")
async def ready(response: Response, link: LinkDep,
                settings: SettingsDep, catalog_: CatalogDep) -> Ready:
    address, namespace = settings.describe_temporal()
    catalog = catalog_.describe()
    try:
        await link.check()
    except Exception as exc:
        response.status_code = 503
        return Ready(status="unavailable", temporal=address, namespace=namespace, catalog=catalog,
                     detail=f"{type(exc).__name__}: {exc}"[:500])
    return Ready(status="ready", temporal=address, namespace=namespace, catalog=catalog)
