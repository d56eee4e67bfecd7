"""Custom search attributes, so executions can be filtered in the Temporal UI.

The embedded dev server registers them at start (``--search-attribute``). On an existing
cluster register them once per namespace (docs/deployment.md)::

    temporal operator search-attribute create --namespace NS --name NoetlPlaybookPath --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlPlaybookName --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlState --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlParentExecutionId --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlPlaybookVersion --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlPlaybookHash --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlRedrivenFrom --type Keyword

Until the first six exist, executions start without search attributes (nothing fails).
``NoetlPlaybookVersion`` and ``NoetlPlaybookHash`` name the definition an execution is pinned
to (docs/schedules.md, "Versions"); they are set at start and never change.
``NoetlRedrivenFrom`` is the execution a redrive recovers (docs/operations.md), set at the
redrive's start and never changed; added after the others, so a namespace set up before it
still gets the six (a redrive there starts without it, with a warning to run ``setup`` again).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.common import SearchAttributeKey, TypedSearchAttributes
from temporalio.service import RPCError

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = ["PLAYBOOK_PATH", "PLAYBOOK_NAME", "NOETL_STATE", "PARENT_EXECUTION_ID", "PLAYBOOK_VERSION",
           "PLAYBOOK_HASH", "REDRIVEN_FROM", "SEARCH_ATTRIBUTES", "STARTS_NEED", "has_attribute",
           "search_attributes_available"]

PLAYBOOK_PATH = SearchAttributeKey.for_keyword("NoetlPlaybookPath")
PLAYBOOK_NAME = SearchAttributeKey.for_keyword("NoetlPlaybookName")
NOETL_STATE = SearchAttributeKey.for_keyword("NoetlState")        # normalized: docs/status.md
PARENT_EXECUTION_ID = SearchAttributeKey.for_keyword("NoetlParentExecutionId")
#: ``metadata.version``, else the catalog version (labels.playbook_version)
PLAYBOOK_VERSION = SearchAttributeKey.for_keyword("NoetlPlaybookVersion")
#: SHA-256 of the normalized definition the execution runs (labels.definition_hash)
PLAYBOOK_HASH = SearchAttributeKey.for_keyword("NoetlPlaybookHash")
#: the execution a redrive recovers (only on redrives)
REDRIVEN_FROM = SearchAttributeKey.for_keyword("NoetlRedrivenFrom")
#: what ``setup`` and the embedded dev server register
SEARCH_ATTRIBUTES = [PLAYBOOK_PATH, PLAYBOOK_NAME, NOETL_STATE, PARENT_EXECUTION_ID, PLAYBOOK_VERSION,
                     PLAYBOOK_HASH, REDRIVEN_FROM]
#: what a namespace must have for starts to set ours (:func:`search_attributes_available`):
#: not ``NoetlRedrivenFrom``, so a namespace set up before it existed keeps the others
STARTS_NEED = SEARCH_ATTRIBUTES[:6]


def has_attribute(attributes: TypedSearchAttributes, key: SearchAttributeKey[Any]) -> bool:
    """``key in attributes`` (same name and type), spelled out: typeshed sees the
    collection's items (pairs), not its keys."""
    return any(pair.key == key for pair in attributes)


async def search_attributes_available(client: Client, timeout: timedelta = timedelta(seconds=10)) -> bool:
    """Whether the server knows all our search attributes (then starts set them). Here, not
    in ``control``, because the workflow's own activities ask it too (``subplaybooks``)."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

    try:
        resp = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace), timeout=timeout)
    except RPCError:
        return False
    return all(key.name in resp.custom_attributes for key in STARTS_NEED)
