"""The python tool (``kind: python``): the tool (``tool``), the child process that runs a
task's code (``runner``, standard library only: started as ``python -S -c <its text>`` or
loaded by path into the fork server), the fork server's worker side (``forkserver``) and
the server itself (``zygote``, also run from its text), a process started for one task
(``spawn``), and the opt-in in-worker mode (``inworker``).
"""

from .tool import PythonTool

__all__ = ["PythonTool"]
