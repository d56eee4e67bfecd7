"""405 answers with an ``Allow`` header that lists every method of the path; 400 -> 422.

Why: Starlette answers 405 from the first route whose path matches, so for a path served
by several routes (``GET`` and ``POST /executions``) its ``Allow`` header names only one
method. RFC 9110 asks for all of them, and clients use it to discover what they can do.
A body FastAPI cannot even decode (not UTF-8) is answered 400 by FastAPI; like any other
malformed body, it is a 422 here.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

__all__ = ["install_method_not_allowed"]


def allowed_methods(app: FastAPI, request: Request) -> list[str]:
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(request.scope)
        route_methods = getattr(route, "methods", None)  # mounts and websocket routes have none
        if match != Match.NONE and route_methods:
            methods |= set(route_methods)
    return sorted(methods)


def install_method_not_allowed(app: FastAPI) -> None:
    from fastapi.exception_handlers import http_exception_handler

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400:  # FastAPI's "error parsing the body": a malformed request is a 422
            return JSONResponse({"detail": f"malformed request body: {exc.detail}"}, status_code=422)
        if exc.status_code != 405:
            return await http_exception_handler(request, exc)
        methods = allowed_methods(app, request)
        return JSONResponse({"detail": "Method Not Allowed"}, status_code=405,
                            headers={"Allow": ", ".join(methods)})
