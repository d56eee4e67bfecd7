"""An ``artifact`` task's ``uri``, checked at validation: artifacts are local files here.

A literal ``s3://`` or ``gs://`` URI (beside ``kind:`` or under ``input:``/``args:``, where
NoETL reads it too) needs a cloud account: refused here, located, with NTL345 naming the
service, rather than at run time (``tools/artifact.py`` refuses one a template renders).
"""

from __future__ import annotations

from ..templates import is_template
from ..tool_kinds.artifact import CLOUD_SCHEMES
from .diagnostics import Reporter
from .models import Playbook

__all__ = ["check_artifact_uris"]


def check_artifact_uris(playbook: Playbook, reporter: Reporter) -> None:
    for i, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            if task.kind != "artifact":
                continue
            for where, place in (("", task.config), ("input.", task.config.get("input")),
                                 ("args.", task.config.get("args"))):
                uri = place.get("uri") if isinstance(place, dict) else None
                if not isinstance(uri, str) or is_template(uri) or "://" not in uri:
                    continue
                scheme = uri.split("://", 1)[0].lower()
                if scheme in CLOUD_SCHEMES:
                    reporter.add_normalized(
                        "NTL345", f"step '{step.step}': artifact uri {uri!r} needs {CLOUD_SCHEMES[scheme]}: "
                                  "artifacts are files on the worker here",
                        f"workflow[{i}].tool[{j}].config.{where}uri", value=True,
                        fix="write `uri: \"artifact://localfs/<path>\"` and copy the file to the bucket from a "
                            "task (`gsutil cp`, `aws s3 cp`)")
