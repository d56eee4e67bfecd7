"""Pictures of a playbook: its step graph as data, as Mermaid text, and as SVG.

``graph_view(playbook)`` extracts what a reader needs (steps, arcs with their ``when``,
router modes, loops, joins, entry, final step); :mod:`.mermaid` prints it for
``noetl-temporal graph`` and :mod:`.svg` draws it for the API's execution page. All of
it is pure: no I/O, no Temporal.
"""

from .mermaid import to_mermaid
from .model import Edge, GraphView, LoopInfo, Node, graph_view

__all__ = ["Edge", "GraphView", "LoopInfo", "Node", "graph_view", "to_mermaid"]
