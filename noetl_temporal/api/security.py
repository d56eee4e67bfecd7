"""Bearer-token auth and the bind rule.

Why both: a token protects the API once configured, and the bind rule keeps an API
without a token from ever being reachable from another machine by accident (it binds to
127.0.0.1 unless told otherwise, and refuses a public address without a token unless
``--allow-remote-without-token`` says it is intended).
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Annotated

from fastapi import Depends, HTTPException, Query, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from noetl_temporal.errors import ConfigError

__all__ = ["bearer_auth", "answerer", "parse_approvers", "is_loopback", "check_bind"]

_bearer = HTTPBearer(auto_error=False, description="the API token (--token or NOETL_API_TOKEN)")


def bearer_auth(token: str):
    """A FastAPI dependency that requires ``Authorization: Bearer <token>``.

    The ``access_token`` query parameter (RFC 6750 §2.3) is accepted too, because a
    browser's ``EventSource`` cannot send headers: the execution page passes it on to
    the event stream. Prefer the header everywhere else (URLs end up in histories).
    """
    expected = token.encode("utf-8")

    async def require(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                      access_token: Annotated[str | None, Query(
                          include_in_schema=False, max_length=4096)] = None) -> None:
        presented = credentials.credentials if credentials else access_token
        given = (presented or "").encode("utf-8", "surrogateescape")
        if not presented or not hmac.compare_digest(given, expected):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong API token: send "
                                "'Authorization: Bearer <token>'", headers={"WWW-Authenticate": "Bearer"})

    return require


def answerer(token: str | None, approvers: dict[str, str]):
    """A FastAPI dependency for the answer route: who answers (docs/approvals.md).

    An approver token (``--approver NAME=TOKEN``) answers as its NAME, and opens this route
    only; the API token (or no token, when auth is off) answers as ``api``, which a task's
    ``approvers`` list must name for it to answer. Anything else is a 401."""
    if not token and not approvers:   # auth off: no security scheme in the OpenAPI document either
        async def anyone() -> str:
            return API_ANSWERER

        return anyone
    expected = token.encode("utf-8") if token else None
    known = [(t.encode("utf-8"), name) for t, name in approvers.items()]

    async def identify(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                       access_token: Annotated[str | None, Query(
                           include_in_schema=False, max_length=4096)] = None) -> str:
        presented = credentials.credentials if credentials else access_token
        given = (presented or "").encode("utf-8", "surrogateescape")
        name = None
        for secret, who in known:   # every token compared: the time taken says nothing of which matched
            if presented and hmac.compare_digest(given, secret):
                name = who
        if name is not None:
            return name
        if expected is None or (presented and hmac.compare_digest(given, expected)):
            return API_ANSWERER
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong token: send 'Authorization: Bearer "
                            "<token>' with the API token or an approver's", headers={"WWW-Authenticate": "Bearer"})

    return identify


#: who the API token (or an API without auth) answers approvals as
API_ANSWERER = "api"


def parse_approvers(items: list[str]) -> dict[str, str]:
    """``NAME=TOKEN`` items (``--approver``, ``$NOETL_API_APPROVERS`` split on commas) -> token -> name."""
    tokens: dict[str, str] = {}
    for item in items:
        name, sep, token = item.partition("=")
        if not sep or not name.strip() or not token:
            raise ConfigError(f"approver {item.split('=')[0]!r}: expected NAME=TOKEN",
                              fix="pass --approver alice=<a long random token> (one per approver)")
        if token in tokens:
            raise ConfigError(f"approvers {tokens[token]!r} and {name.strip()!r} have the same token",
                              fix="give each approver a token of their own")
        tokens[token] = name.strip()
    return tokens


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, allow_remote_without_token: bool) -> None:
    """Raise ``ConfigError`` for a non-loopback bind without a token (unless explicitly allowed)."""
    if token or is_loopback(host) or allow_remote_without_token:
        return
    raise ConfigError(f"refusing to listen on {host} without an API token: anyone who can reach it could "
                      "start and cancel executions",
                      fix="pass --token (or set NOETL_API_TOKEN), bind to 127.0.0.1, or add "
                          "--allow-remote-without-token if the network is trusted")
