"""``create_app(settings)``: the FastAPI service over the shared client module.

Why a factory: tests, ``noetl-temporal api`` and ``noetl-temporal dev`` each build the
app with their own client (or address), catalog and token, and nothing is global.
Auth is attached only when a token is configured, so the OpenAPI document says exactly
what the running service requires.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI

from noetl_temporal.store.catalog import Catalog

from .errors import install_error_handlers, responses
from .limits import EXPANSION, BodyLimit
from .methods import install_method_not_allowed
from .playbooks import PlaybookCache
from .routes import catalog, control, events, executions, health, schedules, view
from .security import bearer_auth
from .settings import Settings, TemporalLink

__all__ = ["create_app"]

DESCRIPTION = """Run NoETL v10 playbooks as Temporal workflows.

Start executions from inline YAML or the catalog, follow their canonical events (paged
or as server-sent events), read the minimal status, cancel, pause, resume, and patch
ctx (approval gates). See docs/api.md.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(title="noetl-temporal", version=_version(), description=DESCRIPTION)
    app.state.settings = settings
    app.state.link = TemporalLink(settings)
    app.state.catalog = settings.catalog or Catalog.from_config()
    # start requests' playbooks, loaded once per content, their size counted up to the 413's limit
    app.state.playbooks = PlaybookCache(measure_up_to=EXPANSION * settings.max_body_bytes)
    protected: dict = {}
    if settings.token:
        protected = {"dependencies": [Depends(bearer_auth(settings.token))], "responses": responses(401)}
    app.include_router(health.router)
    for module in (executions, events, control, catalog, view, schedules):
        app.include_router(module.router, **protected)
    install_error_handlers(app)
    install_method_not_allowed(app)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes, read_timeout_s=settings.read_timeout_s)
    return app


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("noetl-temporal")
    except Exception:
        return "0"
