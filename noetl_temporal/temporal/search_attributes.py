"""Custom search attributes, so executions can be filtered in the Temporal UI."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

__all__ = ["PLAYBOOK_PATH", "NOETL_STATE", "SEARCH_ATTRIBUTES"]

PLAYBOOK_PATH = SearchAttributeKey.for_keyword("NoetlPlaybookPath")
NOETL_STATE = SearchAttributeKey.for_keyword("NoetlState")
SEARCH_ATTRIBUTES = [PLAYBOOK_PATH, NOETL_STATE]
