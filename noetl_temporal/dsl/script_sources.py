"""NoETL's ``script: {uri, source: {type}}`` (a task's code from elsewhere), checked at
validation: the source types the task's activity loads are ``file``, ``http``, ``s3`` and
``inline``
(tools/_scripts.py); ``gcs`` is refused here (NTL325), with what is missing, so a playbook
does not run its first steps and then fail on the script. NoETL's ``source.auth`` (a
credential by name) is warned about (NTL326): here S3 credentials are keychain templates
in ``source`` or the worker's own identity."""

from __future__ import annotations

from ..templates import is_template
from .diagnostics import Reporter
from .models import Playbook

__all__ = ["check_script_sources", "LOADED", "REFUSED"]

#: the source types the activity loads (tools/_scripts.py keeps the same list)
LOADED = ("file", "http", "s3", "inline")
#: object stores: what each would need
REFUSED = {
    "gcs": "a Google Cloud Storage client and GCP credentials on the worker, which this runtime does not have",
}


def check_script_sources(playbook: Playbook, reporter: Reporter) -> None:
    for i, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            script = task.config.get("script")
            if not isinstance(script, dict):
                continue
            source = script.get("source")
            kind = source.get("type") if isinstance(source, dict) else None
            where = f"workflow[{i}].tool[{j}].config.script"
            if kind is None:
                uri = script.get("uri")
                scheme = uri.split("://", 1)[0] if isinstance(uri, str) and "://" in uri else None
                kind = {"gs": "gcs"}.get(scheme or "")
                if kind is None:
                    continue
            if kind == "s3" and isinstance(source, dict) and source.get("auth") is not None:
                reporter.add_normalized(
                    "NTL326", f"step '{step.step}': `script.source.auth` names NoETL's credential; here it is not "
                              "read: the S3 client uses `source.access_key_id`/`secret_access_key` or the "
                              "worker's AWS identity", f"{where}.source.auth")
            if not isinstance(kind, str) or is_template(kind) or kind in LOADED:
                continue
            needs = REFUSED.get(kind, "a loader this runtime does not have")
            reporter.add_normalized(
                "NTL325", f"step '{step.step}': its script comes from {kind!r}, which needs {needs}",
                f"{where}.source.type" if isinstance(source, dict) and "type" in source else where)
