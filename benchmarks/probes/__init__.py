"""Perf probes: each measures one cost in isolation (an activity's CPU, a fork, the event
store's write, validation's speed ...) and prints it; none is a test or a workload of
``python -m benchmarks``. Run one from the repository root as
``python -m benchmarks.probes.NAME --help``; docs/performance.md cites their numbers.
"""
