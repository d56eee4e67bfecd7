"""Data conversion: how values travel through Temporal.

The data converter layered over a deployment's own (``converter``), the JSON payload
converter with its shortcut for our messages (``payload_converter``), the claim check for
large payloads (``claimcheck``), values a workflow hands its own worker's local activity
(``local_only``), a playbook's failure as its headline (``headline_failures``) and its output
however its workflow closed (``playbook_result``). docs/layout.md.
"""
