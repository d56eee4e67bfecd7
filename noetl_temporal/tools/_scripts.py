"""A task's code loaded from elsewhere: NoETL's ``script: {uri, source: {type, ...}}``.

``python`` (its code) and ``postgres`` (its SQL) take it instead of writing the text inline.
Loaded in the task's activity, on every attempt, so the workflow's history holds the
reference, never the text (docs/tools.md, "Code from a file or URL"):

* ``source.type: file``: ``uri`` (or ``source.path``) is a file the worker reads; a relative
  path is resolved against the worker's working directory, as NoETL's runtime does.
* ``source.type: http``: ``source.endpoint`` (else ``uri``) is fetched with ``method``
  (GET), ``headers`` and ``timeout`` (30 s); a status of 500 or more, or a network error,
  fails the attempt as retryable, any other status that is not 2xx as not retryable.

``s3`` and ``gcs`` are refused at validation (NTL325): this runtime has no object-store client.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ToolConfigError, ToolError

__all__ = ["script_text", "SOURCE_TYPES", "MAX_SCRIPT_BYTES"]

#: the source types this runtime loads
SOURCE_TYPES = ("file", "http")
MAX_SCRIPT_BYTES = 5 * 1024 * 1024   # the same bound as a playbook file: code, not data
_FIX = "give `script: {uri: <file or URL>, source: {type: file | http}}`, or write the text inline"


async def script_text(config: dict[str, Any], kind: str) -> str | None:
    """The text ``config['script']`` names, or None when the task has no ``script``."""
    script = config.get("script")
    if script is None:
        return None
    if not isinstance(script, dict):
        raise ToolConfigError(f"{kind} task 'script' must be a mapping, got {type(script).__name__}", fix=_FIX)
    source = script.get("source") or {}
    if not isinstance(source, dict):
        raise ToolConfigError(f"{kind} task 'script.source' must be a mapping", fix=_FIX)
    uri = script.get("uri")
    kind_of_source = source.get("type") or ("http" if str(uri).startswith(("http://", "https://")) else "file")
    if kind_of_source == "file":
        return _read_file(source.get("path") or uri, kind)
    if kind_of_source == "http":
        return await _fetch(source.get("endpoint") or uri, source, kind)
    raise ToolConfigError(f"{kind} task: script source type {kind_of_source!r} is not loaded here "
                          f"(loaded: {', '.join(SOURCE_TYPES)})", fix=_FIX)


def _read_file(path: Any, kind: str) -> str:
    if not isinstance(path, str) or not path:
        raise ToolConfigError(f"{kind} task: script from a file needs `uri` (the file's path)", fix=_FIX)
    where = os.path.abspath(os.path.expanduser(path))
    try:
        size = os.path.getsize(where)
        if size > MAX_SCRIPT_BYTES:
            raise ToolConfigError(f"{kind} task: script file {where} is {size:,} bytes, over the "
                                  f"{MAX_SCRIPT_BYTES:,}-byte limit", fix="keep data out of the script")
        with open(where, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ToolConfigError(f"{kind} task: script file {where} does not exist on this worker",
                              fix="put the file there (relative paths start at the worker's working "
                                  "directory) or give its absolute path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolConfigError(f"{kind} task: cannot read script file {where}: {exc}", fix=_FIX) from None


async def _fetch(url: Any, source: dict[str, Any], kind: str) -> str:
    import httpx

    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ToolConfigError(f"{kind} task: script from http needs `source.endpoint` (or `uri`) to be an "
                              f"http(s) URL, got {url!r}", fix=_FIX)
    method = str(source.get("method") or "GET").upper()
    headers = source.get("headers") or {}
    try:
        timeout = float(source.get("timeout") or 30)
    except (TypeError, ValueError):
        raise ToolConfigError(f"{kind} task: script.source.timeout must be seconds, got "
                              f"{source.get('timeout')!r}") from None
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client:
            async with client.stream(method, url, headers=headers) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_SCRIPT_BYTES:
                        raise ToolConfigError(f"{kind} task: script at {url} is over the "
                                              f"{MAX_SCRIPT_BYTES:,}-byte limit", fix="keep data out of the script")
    except httpx.HTTPError as exc:
        raise ToolError(f"{kind} task: cannot fetch script {url}: {type(exc).__name__}: {exc}", kind="script",
                        retryable=True) from None
    if response.status_code >= 500:
        raise ToolError(f"{kind} task: fetching script {url} answered HTTP {response.status_code}",
                        kind="script", retryable=True)
    if not 200 <= response.status_code < 300:
        raise ToolConfigError(f"{kind} task: fetching script {url} answered HTTP {response.status_code}",
                              fix="check the URL and its access")
    try:
        return bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        raise ToolConfigError(f"{kind} task: script at {url} is not UTF-8 text") from None
