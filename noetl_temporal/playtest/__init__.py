"""``noetl-temporal test``: playbook tests with mocked tools and virtual time
(docs/testing-playbooks.md). ``spec``: the test file; ``driver``: the pure engine run with
mocks and a virtual clock (the default mode); ``checks``: expectations against a run;
``session``: finding files, running cases, the report and JUnit XML; ``on_temporal``: the same
cases on the dev server (``--temporal``); ``pytest_plugin``: fixtures for pytest users; ``record``: a case written from a real run."""
