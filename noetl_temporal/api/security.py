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

__all__ = ["bearer_auth", "is_loopback", "check_bind"]

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
