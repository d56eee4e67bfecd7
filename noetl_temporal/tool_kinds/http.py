"""``kind: http`` (tools/http.py): one HTTP request."""

from .declaration import Setting, ToolKind
from .python import TIMEOUT

HTTP = ToolKind(
    kind="http",
    summary="sends one HTTP request",
    settings=(
        Setting("url", ("string",), "query parameters already in the url are kept", aliases=("endpoint",)),
        Setting("method", ("string",), "default `GET`"),
        Setting("params", ("mapping",), "merged into the query; `null` values are dropped"),
        Setting("headers", ("mapping",), "values sent as text (`true`, JSON); `null` drops the header"),
        Setting("json", ("any",), "JSON body"),
        Setting("payload", ("any",), "JSON body when a mapping/list (NoETL's worker key), else as `body`"),
        Setting("body", ("any",), "text/bytes as is; a mapping is form-encoded unless `Content-Type` says "
                                  "JSON; a list is JSON", aliases=("data",)),
        TIMEOUT,
        Setting("verify", ("boolean", "string"), "default true; may be a CA bundle path",
                aliases=("verify_ssl",)),
        Setting("follow_redirects", ("boolean", "string"), "default true"),
    ),
    required=(("url",),),
    ignored={"auth": "the http tool does not add credentials from `auth`; send them in `headers:` "
                     "(`Authorization: \"Bearer {{ keychain.<entry>.token }}\"`)",
             "output_select": "not applied; select the parts of a large result with the task's "
                              "`output: {select: [{path, as}]}`"},
)
