"""Prepare a namespace of an existing cluster for playbooks: register our search attributes.

``noetl-temporal setup --namespace NS`` calls :func:`register_search_attributes`. It adds
only the attributes the namespace lacks, so running it again changes nothing. Without
them everything still works: starts put the playbook's path and name in the memo only
(``client.start_execution`` warns), and the API lists without its playbook filter.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client

from ..workflow.search_attributes import SEARCH_ATTRIBUTES

__all__ = ["register_search_attributes", "missing_search_attributes"]

_RPC_TIMEOUT = timedelta(seconds=30)


async def missing_search_attributes(client: Client, namespace: str | None = None) -> list[str]:
    """Our attribute names the namespace (default: the client's) does not have."""
    resp = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace or client.namespace), timeout=_RPC_TIMEOUT)
    known = set(resp.custom_attributes) | set(resp.system_attributes)
    return [key.name for key in SEARCH_ATTRIBUTES if key.name not in known]


async def register_search_attributes(client: Client, namespace: str | None = None) -> list[str]:
    """Add the ones that are missing (all Keyword); the names added, [] when none was."""
    namespace = namespace or client.namespace
    missing = await missing_search_attributes(client, namespace)
    if missing:
        await client.operator_service.add_search_attributes(AddSearchAttributesRequest(
            namespace=namespace,
            search_attributes={name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for name in missing}),
            timeout=_RPC_TIMEOUT)
    return missing
