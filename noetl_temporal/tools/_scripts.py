"""A task's code loaded from elsewhere: NoETL's ``script: {uri, source: {type, ...}}``.

``python`` (its code) and ``postgres`` (its SQL) take it instead of writing the text inline.
Loaded in the task's activity, on every attempt, so the workflow's history holds the
reference, never the text (docs/tools.md, "Code from a file or URL"):

* ``source.type: inline``: ``source.code`` is the text (NoETL's spelling of inline code).
* ``source.type: file``: ``uri`` (or ``source.path``) is a file the worker reads; a relative
  path is resolved against the worker's working directory, as NoETL's runtime does.
* ``source.type: http``: ``source.endpoint`` (else ``uri``) is fetched with ``method``
  (GET), ``headers`` and ``timeout`` (30 s); a status of 500 or more, or a network error,
  fails the attempt as retryable, any other status that is not 2xx as not retryable.

* ``source.type: s3``: ``uri`` is ``s3://bucket/key`` (or ``source.bucket`` and a key in
  ``uri``), read with boto3 (the ``s3`` extra): ``source.region``, ``source.endpoint`` (an
  S3-compatible server: MinIO, moto), credentials from ``source.access_key_id`` /
  ``secret_access_key`` / ``session_token`` (keychain templates, rendered and masked by the
  activity), else the worker's own AWS identity (boto3's default chain).

``gcs`` is refused at validation (NTL325): this runtime has no GCS client.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ..errors import ToolConfigError, ToolError

__all__ = ["script_text", "SOURCE_TYPES", "MAX_SCRIPT_BYTES"]

#: the source types this runtime loads
SOURCE_TYPES = ("file", "http", "s3", "inline")
MAX_SCRIPT_BYTES = 5 * 1024 * 1024   # the same bound as a playbook file: code, not data
_FIX = "give `script: {uri: <file, URL or s3://bucket/key>, source: {type: file | http | s3}}`, or write the text inline"


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
    scheme = str(uri).split("://", 1)[0] if "://" in str(uri) else ""
    kind_of_source = source.get("type") or {"http": "http", "https": "http", "s3": "s3"}.get(scheme, "file")
    if kind_of_source == "inline":   # NoETL's `source: {type: inline, code: ...}`: the text itself
        code = source.get("code")
        if not isinstance(code, str):
            raise ToolConfigError(f"{kind} task: an inline script needs `source.code` (the text)", fix=_FIX)
        return code
    if kind_of_source == "file":
        return _read_file(source.get("path") or uri, kind)
    if kind_of_source == "http":
        return await _fetch(source.get("endpoint") or uri, source, kind)
    if kind_of_source == "s3":
        return await asyncio.to_thread(_read_s3, uri, source, kind)
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


def _read_s3(uri: Any, source: dict[str, Any], kind: str) -> str:
    bucket, key = _s3_location(uri, source, kind)
    try:
        import boto3
        import botocore.exceptions
    except ImportError:
        raise ToolConfigError(f"{kind} task: a script from s3 needs boto3 on the worker",
                              fix="pip install 'noetl-temporal[s3]' on the worker") from None
    options: dict[str, Any] = {}
    for ours, theirs in (("region", "region_name"), ("endpoint", "endpoint_url"),
                         ("access_key_id", "aws_access_key_id"), ("secret_access_key", "aws_secret_access_key"),
                         ("session_token", "aws_session_token")):
        if source.get(ours):
            options[theirs] = str(source[ours])
    try:
        client = boto3.client("s3", **options)
        head = client.head_object(Bucket=bucket, Key=key)
        if int(head.get("ContentLength") or 0) > MAX_SCRIPT_BYTES:
            raise ToolConfigError(f"{kind} task: script s3://{bucket}/{key} is over the {MAX_SCRIPT_BYTES:,}-byte "
                                  "limit", fix="keep data out of the script")
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        message = f"{kind} task: cannot read script s3://{bucket}/{key}: {code or status}"
        if status >= 500 or code in ("SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable"):
            raise ToolError(message, kind="script", retryable=True) from None
        raise ToolConfigError(message, fix="check the bucket, the key and the credentials' access") from None
    except botocore.exceptions.NoCredentialsError:
        raise ToolConfigError(f"{kind} task: no AWS credentials for s3://{bucket}/{key}",
                              fix="give `source.access_key_id`/`secret_access_key` from the keychain "
                                  "(\"{{ keychain.<entry>.<field> }}\") or an AWS identity on the worker") from None
    except botocore.exceptions.BotoCoreError as exc:   # endpoint unreachable, connection reset ...
        raise ToolError(f"{kind} task: cannot read script s3://{bucket}/{key}: {exc}", kind="script",
                        retryable=True) from None
    try:
        return bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        raise ToolConfigError(f"{kind} task: script s3://{bucket}/{key} is not UTF-8 text") from None


def _s3_location(uri: Any, source: dict[str, Any], kind: str) -> tuple[str, str]:
    if isinstance(uri, str) and uri.startswith("s3://"):
        bucket, _, key = uri[len("s3://"):].partition("/")
    else:
        bucket, key = str(source.get("bucket") or ""), str(uri or "").lstrip("/")
    if not bucket or not key:
        raise ToolConfigError(f"{kind} task: a script from s3 needs `uri: s3://bucket/key` (or `source.bucket` "
                              f"and the key as `uri`), got {uri!r}", fix=_FIX)
    return bucket, key
