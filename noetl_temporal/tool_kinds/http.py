"""``kind: http`` (tools/http.py): one HTTP request."""

from .declaration import Setting, ToolKind

#: NoETL's documented shape, ``timeout: {connect: 5, read: 30}`` (also written as the task's
#: ``spec.timeout``, which normalize moves here): httpx's phase timeouts
TIMEOUT_PHASES = ("connect", "read")
TIMEOUT = Setting("timeout", ("number", "string", "mapping"),
                  "seconds for one attempt (the stricter of this and the activity's limit wins), or "
                  "`{connect: s, read: s}`: the connect and read phases each bounded (the attempt by the "
                  "activity's limit)", phases=TIMEOUT_PHASES)

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
        Setting("form", ("mapping",), "NoETL's form body: sent form-encoded "
                                      "(`application/x-www-form-urlencoded`), values as text"),
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
