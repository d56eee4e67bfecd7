"""``kind: artifact`` (tools/artifact.py): NoETL's artifact tool, `get` and `put`, on local files
and the result store."""

from collections.abc import Mapping

from .declaration import Setting, ToolKind

#: artifact URI schemes on a cloud store -> the service (refused: NTL345)
CLOUD_SCHEMES: Mapping[str, str] = {"s3": "Amazon S3 (an S3 bucket and AWS credentials)",
                                    "gs": "Google Cloud Storage (a GCS bucket and GCP credentials)",
                                    "gcs": "Google Cloud Storage (a GCS bucket and GCP credentials)"}

ARTIFACT = ToolKind(
    kind="artifact",
    summary="NoETL's artifact tool: `get` reads a stored result (`result_ref`) or a file (`uri`) back under "
            "`data`; `put` writes `data` to a file (`uri`, gzip by default)",
    settings=(
        Setting("action", ("string",), "`get` (the default) or `put`", choices=("get", "put")),
        Setting("result_ref", ("any",), "`get`: a ResultRef (`\"{{ start._ref }}\"`, `\"{{ start }}\"`) or its "
                                        "`noetl://` string; NoETL writes it under `input:`", aliases=("ref",)),
        Setting("uri", ("string",), "`get`/`put`: a file: `artifact://localfs/<path>`, `file://<path>` or a "
                                    "path (`s3://`, `gs://` need a cloud account: NTL345)"),
        Setting("data", ("any",), "`put`: the value written as JSON (a stored result is written whole)"),
        Setting("compress", ("boolean",), "`put`: gzip the file and add `.gz` (default true)"),
    ),
    reads_result_refs=True,
    ignored={"credential": "a cloud store's credential: artifacts are local files here"},
)
