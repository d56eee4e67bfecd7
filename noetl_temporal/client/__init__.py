"""The client side: connecting to Temporal, starting, observing and controlling executions,
schedules, redrives and answers, the embedded dev server, one run end to end (what
``noetl-temporal run`` does) and NoETL's ``noetl.run``. docs/layout.md.
"""
