"""Custom search attributes, so executions can be filtered in the Temporal UI.

The embedded dev server registers them at start (``--search-attribute``). On an existing
cluster register them once per namespace (docs/deployment.md)::

    temporal operator search-attribute create --namespace NS --name NoetlPlaybookPath --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlPlaybookName --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlState --type Keyword
    temporal operator search-attribute create --namespace NS --name NoetlParentExecutionId --type Keyword

Until all of them exist, executions start without search attributes (nothing fails).
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey, TypedSearchAttributes

__all__ = ["PLAYBOOK_PATH", "PLAYBOOK_NAME", "NOETL_STATE", "PARENT_EXECUTION_ID", "SEARCH_ATTRIBUTES",
           "has_attribute"]

PLAYBOOK_PATH = SearchAttributeKey.for_keyword("NoetlPlaybookPath")
PLAYBOOK_NAME = SearchAttributeKey.for_keyword("NoetlPlaybookName")
NOETL_STATE = SearchAttributeKey.for_keyword("NoetlState")        # normalized: docs/status.md
PARENT_EXECUTION_ID = SearchAttributeKey.for_keyword("NoetlParentExecutionId")
SEARCH_ATTRIBUTES = [PLAYBOOK_PATH, PLAYBOOK_NAME, NOETL_STATE, PARENT_EXECUTION_ID]


def has_attribute(attributes: TypedSearchAttributes, key: SearchAttributeKey[Any]) -> bool:
    """``key in attributes`` (same name and type), spelled out: typeshed sees the
    collection's items (pairs), not its keys."""
    return any(pair.key == key for pair in attributes)
