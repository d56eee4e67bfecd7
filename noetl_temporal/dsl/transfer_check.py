"""A ``transfer`` task's endpoints, checked at validation: ``source.type`` and ``target.type``.

The transfer tool moves rows between the endpoint types of ``tool_kinds/transfer.py``. A
literal type it does not move rows with is refused here, located, rather than at run time:
``snowflake`` (NoETL's other transfer endpoint) with NTL336, the code naming the missing
service, anything else with NTL316 and the types it takes.
"""

from __future__ import annotations

from ..templates import is_template
from ..tool_kinds.transfer import SOURCE_TYPES, TARGET_TYPES
from .diagnostics import Reporter
from .models import Playbook

__all__ = ["check_transfer_endpoints"]

#: endpoint types that need a service this runtime cannot reach -> (code, the service)
_SERVICES = {"snowflake": ("NTL336", "a Snowflake account, a cloud warehouse this runtime does not reach")}


def check_transfer_endpoints(playbook: Playbook, reporter: Reporter) -> None:
    for i, step in enumerate(playbook.workflow):
        for j, task in enumerate(step.tool):
            if task.kind != "transfer":
                continue
            for key, types in (("source", SOURCE_TYPES), ("target", TARGET_TYPES)):
                part = task.config.get(key)
                if not isinstance(part, dict):
                    continue
                field = "type" if "type" in part else "tool"
                kind = part.get(field)
                if not isinstance(kind, str) or is_template(kind) or kind.lower() in types:
                    continue
                where = f"workflow[{i}].tool[{j}].config.{key}.{field}"
                code, service = _SERVICES.get(kind.lower(), ("NTL316", ""))
                if service:
                    message = f"step '{step.step}': transfer {key} type {kind!r} needs {service}"
                    fix = (f"move the rows with a `python` task (snowflake-connector-python, credentials from "
                           f"the keychain), or transfer from one of: {', '.join(types)}")
                else:
                    message = f"step '{step.step}': transfer {key} type {kind!r} is not one it moves rows with"
                    fix = f"write one of: {', '.join(types)}"
                reporter.add_normalized(code, message, where, value=True, fix=fix)
