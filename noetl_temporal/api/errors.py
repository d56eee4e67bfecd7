"""Typed errors -> HTTP answers, in one place.

Why: a client mistake must never be a 500. Each error the control, catalog and
validation code raise on purpose maps to the status a client can act on; only real
server trouble (Temporal or the database unreachable) is a 503, and anything else is
a bug, logged with its traceback and answered 500 without internals.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from temporalio.service import RPCError, RPCStatusCode

from noetl_temporal.client.control import ExecutionFinished, NotFound, Rejected
from noetl_temporal.client.redrive_start import StillRunning
from noetl_temporal.client.schedules import ScheduleExists, ScheduleInvalid
from noetl_temporal.errors import ConfigError, NoetlError, PlaybookInvalid

from .admission import Overloaded
from .limits import TooLarge
from .models import ErrorBody

__all__ = ["install_error_handlers", "responses", "BadRequest", "invalid_playbook"]

log = logging.getLogger("noetl_temporal.api")


class BadRequest(NoetlError):
    """A request that parsed but makes no sense (bad page token, unusable filter): 422."""


#: seconds a client is told to wait (Retry-After) when Temporal or the database did not answer
UNAVAILABLE_RETRY_AFTER_S = 5


def _json(status: int, detail: object, retry_after_s: int | None = None, **extra: object) -> JSONResponse:
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s is not None else None
    return JSONResponse({"detail": detail, **{k: v for k, v in extra.items() if v is not None}},
                        status_code=status, headers=headers)


def invalid_playbook(exc: PlaybookInvalid) -> JSONResponse:
    errors = [d.to_dict() for d in exc.diagnostics if d.is_error]
    warnings = [d.to_dict() for d in exc.diagnostics if not d.is_error]
    return _json(422, f"the playbook is invalid: {len(errors)} error(s)", errors=errors, warnings=warnings)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(NotFound)
    async def _not_found(_: Request, exc: NotFound) -> JSONResponse:
        return _json(404, str(exc))

    @app.exception_handler(ExecutionFinished)
    async def _finished(_: Request, exc: ExecutionFinished) -> JSONResponse:
        return _json(409, str(exc), state=exc.state)

    @app.exception_handler(StillRunning)
    async def _still_running(_: Request, exc: StillRunning) -> JSONResponse:
        return _json(409, str(exc), state="RUNNING")

    @app.exception_handler(Rejected)
    async def _rejected(_: Request, exc: Rejected) -> JSONResponse:
        return _json(422, str(exc))

    @app.exception_handler(ScheduleExists)
    async def _exists(_: Request, exc: ScheduleExists) -> JSONResponse:
        return _json(409, str(exc))

    @app.exception_handler(ScheduleInvalid)
    async def _schedule_invalid(_: Request, exc: ScheduleInvalid) -> JSONResponse:
        return _json(422, str(exc))

    @app.exception_handler(PlaybookInvalid)
    async def _invalid(_: Request, exc: PlaybookInvalid) -> JSONResponse:
        return invalid_playbook(exc)

    @app.exception_handler(TooLarge)
    async def _too_large(_: Request, exc: TooLarge) -> JSONResponse:
        return _json(413, str(exc))

    @app.exception_handler(BadRequest)
    async def _bad(_: Request, exc: BadRequest) -> JSONResponse:
        return _json(422, str(exc))

    @app.exception_handler(ConfigError)
    async def _config(_: Request, exc: ConfigError) -> JSONResponse:
        log.warning("service unavailable: %s", exc)
        return _json(503, str(exc), UNAVAILABLE_RETRY_AFTER_S)

    @app.exception_handler(Overloaded)
    async def _overloaded(_: Request, exc: Overloaded) -> JSONResponse:
        return _json(503, str(exc), exc.retry_after_s)

    for database_error in _database_errors():
        @app.exception_handler(database_error)
        async def _database(_: Request, exc: Exception) -> JSONResponse:
            log.warning("catalog database error: %s", exc)
            return _json(503, f"the catalog database is unavailable: {type(exc).__name__}", UNAVAILABLE_RETRY_AFTER_S)

    @app.exception_handler(RPCError)
    async def _rpc(_: Request, exc: RPCError) -> JSONResponse:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return _json(404, exc.message)
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            return _json(422, exc.message)
        log.warning("Temporal error: %s (%s)", exc.message, exc.status)
        return _json(503, f"Temporal did not answer: {exc.message}", UNAVAILABLE_RETRY_AFTER_S)


def _database_errors() -> list[type[Exception]]:
    """Operational database errors (server down, file locked): the service's trouble, a 503."""
    import sqlite3

    errors: list[type[Exception]] = [sqlite3.OperationalError]
    try:
        import psycopg

        errors.append(psycopg.OperationalError)
    except ImportError:  # PostgreSQL support is optional
        pass
    return errors


_DESCRIPTIONS = {
    401: "missing or wrong API token",
    404: "no such execution, playbook, version or schedule",
    409: "the execution already finished (its state is in the body), or a schedule of that name exists",
    413: "request body too large, or larger than allowed once parsed (YAML aliases)",
    422: "malformed request, invalid playbook (with located errors) or a rejected ctx patch",
    503: "Temporal or the catalog database is unreachable, or the API is at capacity (Retry-After says when "
         "to try again)",
}


def responses(*codes: int) -> dict[int | str, dict]:
    """OpenAPI entries for the error statuses a route can answer (the property test checks them)."""
    return {code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]} for code in codes}
