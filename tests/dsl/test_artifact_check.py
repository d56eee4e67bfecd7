"""An ``artifact`` task's literal cloud ``uri`` is refused at validation, located (NTL345)."""

from __future__ import annotations

import pytest

from .helpers import errors, find, playbook


def artifact(setting: str) -> str:
    return playbook(f"workflow:\n  - step: a\n    tool:\n      kind: artifact\n      action: put\n      {setting}\n"
                    "      data: {x: 1}\n")


@pytest.mark.parametrize("setting, at, service", [
    ("uri: gs://bucket/a.json", "gs://", "Google Cloud Storage"),
    ("input: {uri: 's3://bucket/a.json'}", "'s3://", "Amazon S3"),
])
def test_a_cloud_uri_is_ntl345_naming_the_service(setting: str, at: str, service: str) -> None:
    text = artifact(setting)
    (diag,) = errors(text)
    assert diag.code == "NTL345" and service in diag.message and "artifact://localfs" in diag.fix
    assert (diag.line, diag.col) == find(text, at)


@pytest.mark.parametrize("setting", ["uri: artifact://localfs/tmp/a.json", "uri: /tmp/a.json",
                                     "uri: '{{ workload.target }}'"])
def test_local_and_templated_uris_validate(setting: str) -> None:
    assert errors(artifact(setting)) == []
