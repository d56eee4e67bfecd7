"""The Kubernetes Job NoETL would submit for a ``kind: container`` task.

``container`` is refused at validation (NTL338: there is no cluster to submit to), but a
user moving a playbook to a cluster, or writing the ``shell`` task that replaces it, needs
to see what the task asks for. ``noetl-temporal run --dry-run`` prints, after the located
refusal, one ``batch/v1`` Job per container task, built here from the task as written
(templates are left as written: NoETL renders them when it submits). Both of NoETL's
shapes are read: the keys beside ``kind:`` (``image``, ``command``, ``args``, ``env``,
``resources``, ``namespace``, ``service_account``, ``backoff_limit``, ``timeout_seconds``,
``restart_policy``) and the same keys under ``runtime:``. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["job_spec", "container_tasks"]

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _name(text: str) -> str:
    """A DNS-1123 label fragment (what a Job's generateName may hold)."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "task"


def job_spec(task: Mapping[str, Any], *, step: str, label: str, playbook: str = "") -> dict[str, Any]:
    """The Job for one container task (``task`` as written in the playbook)."""
    runtime = task.get("runtime")
    runtime = runtime if isinstance(runtime, Mapping) else {}
    cfg = {**{k: v for k, v in task.items() if k != "runtime"}, **runtime}
    container: dict[str, Any] = {"name": _name(label), "image": cfg.get("image")}
    for key, field in (("command", "command"), ("args", "args"), ("env", "env"), ("resources", "resources"),
                       ("working_dir", "workingDir"), ("image_pull_policy", "imagePullPolicy")):
        value = cfg.get(key)
        if isinstance(value, str) and key in ("command", "args"):
            value = ["/bin/sh", "-c", value] if key == "command" else [value]
        if isinstance(value, Mapping) and key == "env":
            value = [{"name": str(k), "value": v} for k, v in value.items()]
        if value not in (None, [], {}):
            container[field] = value
    pod: dict[str, Any] = {"restartPolicy": cfg.get("restart_policy") or "Never", "containers": [container]}
    if cfg.get("service_account"):
        pod["serviceAccountName"] = cfg["service_account"]
    labels = {"app.kubernetes.io/managed-by": "noetl", "noetl.io/step": _name(step), "noetl.io/task": _name(label)}
    if playbook:
        labels["noetl.io/playbook"] = _name(playbook)
    spec: dict[str, Any] = {"backoffLimit": cfg.get("backoff_limit", 0)}
    if cfg.get("timeout_seconds") is not None:
        spec["activeDeadlineSeconds"] = cfg["timeout_seconds"]
    if cfg.get("ttl_seconds_after_finished") is not None:
        spec["ttlSecondsAfterFinished"] = cfg["ttl_seconds_after_finished"]
    spec["template"] = {"metadata": {"labels": dict(labels)}, "spec": pod}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"generateName": f"noetl-{_name(step)}-", "namespace": cfg.get("namespace") or "default",
                         "labels": labels},
            "spec": spec}


def _at(doc: Any, path: str) -> Any:
    node = doc
    for name, index in _PATH_PART.findall(path):
        if index:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            node = node.get(name) if isinstance(node, Mapping) else None
    return node


def container_tasks(doc: Any, kind_paths: list[str]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(step, label, task)`` of each task whose ``kind`` a diagnostic located at ``kind_paths``
    (``workflow[3].tool[0].kind``) in the playbook's document ``doc``."""
    for path in kind_paths:
        task_path = path.rsplit(".", 1)[0]
        task = _at(doc, task_path)
        step = _at(doc, task_path.split(".tool", 1)[0])
        if not isinstance(task, Mapping) or not isinstance(step, Mapping):
            continue
        last = task_path.rsplit(".", 1)[-1]
        # NoETL's `- job: {kind: container}` form: the label is the key the task sits under
        label = task.get("name") or (last if last != "tool" and not last.endswith("]") else "task")
        yield str(step.get("step", "step")), str(label), task
