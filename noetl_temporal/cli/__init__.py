"""The ``noetl-temporal`` command line: one module per command family.

``main`` parses and dispatches (``main.COMMANDS``); ``run``, ``observe``, ``control``,
``serve`` (``api`` and ``dev``) and ``worker`` hold the commands that need Temporal, imported
only when used so ``--help`` stays fast; ``connection`` (the Temporal connection flags) and
``telemetry`` hold the flags they share. This is
the top of the dependency graph: the library and the service never import it.
"""

from .main import COMMANDS, Command, build_parser, console, main

__all__ = ["COMMANDS", "Command", "build_parser", "console", "main"]
