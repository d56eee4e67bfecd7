"""noetl-temporal: run NoETL v10 playbooks as Temporal workflows."""
