"""``kind: python`` (tools/python/): Python code in a sandboxed subprocess."""

from .declaration import Setting, ToolKind

TIMEOUT = Setting("timeout", ("number", "string"), "seconds for one attempt (the stricter of this and the "
                                                   "activity's limit wins)")

#: NoETL's code from elsewhere (tools/_scripts.py), for the kinds that take it
SCRIPT = Setting("script", ("mapping",), "NoETL's `{uri, source: {type: file, http, s3 or inline, ...}}`: the text "
                "loaded by the task's activity from a file, a URL or an S3 object, instead of inline "
                "(docs/tools.md, \"Code from a file or URL\")")

PYTHON = ToolKind(
    kind="python",
    summary="runs Python code in a subprocess (or the worker, `in_worker: true`)",
    settings=(
        Setting("code", ("string",), "Python that sets `result` or defines `main(...)`"),
        Setting("code_b64", ("string",), "the code, base64-encoded", aliases=("code_base64",)),
        SCRIPT,
        Setting("libs", ("mapping", "list", "string"),
                "`{alias: module}`, `{alias: {from: pkg, import: name}}` or `[module, ...]`"),
        Setting("env", ("mapping",), "extra environment variables for the child"),
        TIMEOUT,
        Setting("in_worker", ("boolean",), "`true`: run in the worker process itself; default `false`"),
    ),
    required=(("code", "code_b64", "script"),),
    ignored={"assert": "NoETL's `expects`/`returns` contract is not checked by noetl-temporal (check the "
                      "result in a task policy or a later task)",
             "auth": "a python task gets no credentials from `auth`; pass them with "
                     "`input: {token: \"{{ keychain.<entry>.<field> }}\"}`"},
)
