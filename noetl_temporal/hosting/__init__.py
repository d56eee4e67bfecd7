"""Hosting a worker: the worker and everything it registers, its workflow runner and sandbox,
the SDK runtime, full garbage collections between activations, cancelled activities' logs,
and replaying recorded histories against the installed code. docs/layout.md.
"""
